"""Host-side tools for idlelab: the one QEMU command line, exit-code decoding, records."""
