"""Runs a command in a qemu guest booted with a stock Debian kernel (guest/README.md)."""
