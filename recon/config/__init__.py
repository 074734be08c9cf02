"""A config: its fields' schema, the validator, the command line's flags, the route to a pipeline."""
