"""The sentient command line."""
