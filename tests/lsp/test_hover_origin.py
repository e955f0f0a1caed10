"""The hover says where the root cause's message is raised (the mined message index)."""

from __future__ import annotations

import pytest

from .conftest import close, fixture_text, fresh_uri, open_log
from .test_features import hover_text

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_hover_names_the_origin_and_a_version_that_cannot_have_raised_it(client):
    uri = fresh_uri("mined.log")
    await open_log(client, uri, fixture_text("mined-lora-config.log"))
    text = await hover_text(client, uri, 8, 3)
    assert text is not None
    assert "Rule `mined-config` · config · recognised cause" in text
    assert "The message is raised by `vllm/config/lora.py` `LoRAConfig._validate_lora_config`" in text
    assert "**Note**: vLLM 0.4.0 cannot have raised it" in text
    assert "- max cpu loras: `2`" in text and "- max loras: `4`" in text  # capture names in words
    close(client, uri)
