"""Trial records, the one clock and atomic publishing: the bottom layer every other part writes through."""
