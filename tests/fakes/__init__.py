"""Loopback fakes of the outside world (model providers, search APIs, web pages) for the tests, and
scripted agents over small docs folders (:mod:`fakes.loops`, :mod:`fakes.lists`)."""
