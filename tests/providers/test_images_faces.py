"""Images from the faces to the wire: ``elelem.ask``'s ``images`` through a real server session to
the fake OpenAI server as an ``image_url`` part (and a bad one answered InvalidParams naming the
field), ``elelem-lsp ask --image FILE`` through the CLI to the fake Anthropic server as an
``image`` block, and ``--image`` of a file no provider takes refused before anything starts."""

from __future__ import annotations

import base64

import pytest
from pygls.exceptions import JsonRpcException

from scaffold import png

from .test_providers_ask import ask, environment


async def test_an_image_given_to_elelem_ask_reaches_openai_as_an_image_url_part(project, start_editor, fake_server, tmp_path):
    editor = await start_editor(project, settings={"provider": "openai"}, env=environment("openai", fake_server.url, tmp_path))
    data = base64.b64encode(png()).decode()
    result = await editor.ask("what is in this picture?", images=[{"mimeType": "image/png", "data": data}])
    assert result["error"] is None
    first = next(request for request in fake_server.requests if request.path.endswith("/chat/completions"))
    asked = first.json["messages"][-1]
    assert asked["role"] == "user"
    assert asked["content"][0]["text"].startswith("what is in this picture?")
    assert asked["content"][1:] == [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}]


@pytest.mark.parametrize("image, field, problem", [
    ({"mimeType": "image/png", "data": "not base64!"}, "images.0.data", "not base64"),
    ({"mimeType": "image/bmp", "data": "Qk0="}, "images.0.mimeType", "image/bmp is not an image type a provider takes"),
    ({"mimeType": "image/png", "data": base64.b64encode(png() + b"\0" * 4_000_000).decode()}, "images.0.data", "more than the 3.75 MiB"),
])
async def test_a_bad_image_argument_is_invalid_params_naming_the_field(project, start_editor, fake_server, tmp_path, image, field, problem):
    editor = await start_editor(project, settings={"provider": "openai"}, env=environment("openai", fake_server.url, tmp_path))
    with pytest.raises(JsonRpcException) as error:
        await editor.ask("this?", images=[image])
    assert error.value.code == -32602
    assert f"{field}: " in error.value.message and problem in error.value.message
    assert fake_server.requests == []


def test_ask_image_sends_the_file_to_anthropic_as_an_image_block(project, fake_server, tmp_path):
    picture = tmp_path / "shot.png"
    picture.write_bytes(png())
    run = ask(project, "-p", "anthropic", "--image", str(picture), "what is in this picture?",
              env=environment("anthropic", fake_server.url, tmp_path))
    assert run.returncode == 0, run.stderr
    asked = fake_server.requests[0].json["messages"][-1]
    assert asked["role"] == "user"
    image, text = asked["content"]
    assert image == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(png()).decode()}}
    assert text["type"] == "text" and text["text"].startswith("what is in this picture?")


def test_ask_image_of_a_file_no_provider_takes_is_refused_before_anything_starts(project, fake_server, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("not a picture")
    run = ask(project, "-p", "anthropic", "--image", str(notes), "this?", env=environment("anthropic", fake_server.url, tmp_path))
    assert run.returncode == 2
    assert f"argument --image: {notes} is not a PNG, JPEG, GIF or WebP image" in run.stderr
    assert fake_server.requests == []
