"""One module per `hil` verb; each has `add_parser(verbs)` which registers the verb and its handler."""
