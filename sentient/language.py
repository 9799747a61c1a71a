"""The language a run writes in: a checked tag (``de``, ``pt-BR``), its name for the prompts, and
the goal's language, detected when the user names none.

Names come from Babel's locale data (CLDR); detection is langdetect's. langdetect misreads some
short questions (of 451 English benchmark goals, three were read as Catalan or Dutch, each with
a probability of at most 0.72; every goal it read at 0.95 or more was right), so a language is
taken from the goal only when langdetect is that sure. Otherwise the run has no language and its
agents are told to write in the language of the goal, which the model reads better than a
detector reads four words.
"""

from __future__ import annotations

from functools import cache

from babel import Locale, UnknownLocaleError
from langdetect import DetectorFactory
from langdetect.detector_factory import PROFILES_DIRECTORY
from langdetect.lang_detect_exception import LangDetectException

SURE = 0.95  # the least probability at which a detected language is taken (see the docstring)


def check_language(value: str) -> str:
    """``value`` as a language tag: ``de``, ``pt-BR``, ``zh-Hans-CN`` (letters, ``-`` or ``_``).

    Raises:
        ValueError: not a language Babel knows, with what to write instead.
    """
    text = value.strip()
    try:
        locale = Locale.parse(text.replace("_", "-"), sep="-")
    except (UnknownLocaleError, ValueError):
        raise ValueError(f"'{value}' is not a language tag: use one such as en, de, fr or pt-BR") from None
    return "-".join(part for part in (locale.language, locale.script, locale.territory) if part)


def language_name(tag: str) -> str:
    """The language's English name, with its own when that differs: ``German (Deutsch)``."""
    locale = Locale.parse(tag, sep="-")
    english = locale.get_display_name("en") or tag
    native = locale.get_display_name(locale)
    if not native or native.casefold() == english.casefold() or "(" in english:
        return english
    return f"{english} ({native})"


def detect_language(text: str) -> str | None:
    """The language ``text`` is written in, when langdetect is sure of it (:data:`SURE`); else None."""
    detector = _factory().create()
    detector.append(text)
    try:
        best = detector.get_probabilities()[0]
    except (LangDetectException, IndexError):  # no letters at all
        return None
    if best.prob < SURE:
        return None
    try:
        return check_language(best.lang)
    except ValueError:
        return None


@cache
def _factory() -> DetectorFactory:
    """langdetect's profiles, loaded once, with a fixed seed: the same text is always read the same."""
    factory = DetectorFactory()
    factory.load_profile(PROFILES_DIRECTORY)
    factory.seed = 0
    return factory
