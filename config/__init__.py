"""Configuration files: safe loading and validation with errors a user can act on (bottom layer)."""
