"""What agents see: the knowledge store, the context builder and citations."""
