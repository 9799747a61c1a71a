"""Models: the embedded llama.cpp model, the scripted fake, and the factory."""
