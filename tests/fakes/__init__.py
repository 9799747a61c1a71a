"""Loopback fakes of the outside world (model providers, search APIs, web pages) for the tests."""
