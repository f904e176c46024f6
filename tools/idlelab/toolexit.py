"""The host tools' exit statuses, defined once (the CLI's help lists them, and
docs/exit-codes.md, generated from here by tools/exitdoc); a bench that is interrupted exits
128 + the signal instead."""
EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, EXIT_NO_KVM = 0, 1, 2, 3
