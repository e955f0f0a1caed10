"""Numeric settings: only sane ranges are taken, and a refused value names its key."""

from __future__ import annotations

import math

import pytest

from vllm_log_lsp.lsp.settings import MAX_DEBOUNCE_MS, MAX_FILE_SIZE_MB, Settings, parse_settings

DEFAULT = Settings()


@pytest.mark.parametrize(
    "value", [1e308, math.inf, -math.inf, math.nan, 0, -1, MAX_FILE_SIZE_MB * 2, True, "200", None, [5]]
)
def test_max_file_size_out_of_range_keeps_the_default(value):
    settings, errors = parse_settings({"maxFileSizeMB": value})
    assert settings.default.max_file_size_mb == DEFAULT.max_file_size_mb
    if value is not None:
        (message,) = errors
        assert message.startswith("vllmLog.maxFileSizeMB:") and "using 200.0" in message
    settings.default.max_file_chars  # an ordinary int: no OverflowError  # noqa: B018


@pytest.mark.parametrize("value", [0.5, 1, 200, MAX_FILE_SIZE_MB])
def test_max_file_size_in_range(value):
    settings, errors = parse_settings({"vllmLog": {"maxFileSizeMB": value}})
    assert errors == [] and settings.default.max_file_size_mb == value
    assert isinstance(settings.default.max_file_chars, int)


@pytest.mark.parametrize("value", [-1, MAX_DEBOUNCE_MS + 1, 1e12, math.nan, math.inf, False])
def test_debounce_out_of_range_keeps_the_default(value):
    settings, errors = parse_settings([{"workspace": "file:///w", "debounceMs": value}])
    assert settings.for_uri("file:///w/a.log").debounce_ms == DEFAULT.debounce_ms
    (message,) = errors
    assert message.startswith("vllmLog.debounceMs:")
