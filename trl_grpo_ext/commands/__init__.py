"""Subcommands of the `trl-grpo-ext` command line (see `trl_grpo_ext.cli`)."""
