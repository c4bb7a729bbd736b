"""`python -m hil` is the `hil` command (the form the harness uses to start child processes)."""

from hil.cli import main

raise SystemExit(main())
