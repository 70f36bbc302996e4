"""Images through the host: one given with a prompt is kept once beside the conversation (0600,
named by its SHA-256) and reaches the provider by path, the stored turn names it and a new host
continues with it; a provider that cannot take images refuses the turn and the conversation goes
on; ``read`` of an image file gives it to a provider that takes images and refuses otherwise."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import time
from pathlib import Path

import pytest

from scaffold import add_plugin, png, write_script

from elelem_lsp.agent.images import MAX_FILE
from elelem_lsp.host import stored
from elelem_lsp.host.conversations import ConversationStore
from elelem_lsp.host.frontend import BadRequest
from elelem_lsp.host.host import Host
from elelem_lsp.host.images import GIVEN_LATELY, ImageError, decode_image, store_image
from tests.providers.fake_model_server import FakeModelServer, model_requests

from .memory_frontend import MemoryFrontend

SEEING = {"workspacePlugins": True, "provider": "scripted-images"}
RECORD = [[{"type": "record"}, {"type": "saying", "text": "a red picture"}]]


def folder_agent(root: Path, settings: dict):
    frontend = MemoryFrontend(settings_by_folder={root.as_uri(): settings})
    host = Host(frontend)
    host.sync_folders({root.as_uri(): root})
    return host.agents[root.as_uri()]


def fetches(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / ".agents" / "fetches.jsonl").read_text().splitlines()]


def given(content: bytes, media_type: str = "image/png") -> dict:
    return {"mimeType": media_type, "data": base64.b64encode(content).decode()}


@pytest.fixture
def fake_server():
    server = FakeModelServer().start()
    yield server
    server.stop()


# -- the store -----------------------------------------------------------------------------------
def test_an_image_is_stored_once_by_its_hash_private_to_its_owner(tmp_path):
    folder = tmp_path / "conversations" / "app-0123"
    first = store_image(folder, "image/png", png())
    again = store_image(folder, "image/png", png())
    other = store_image(folder, "image/png", png(width=3))
    path = Path(first["path"])
    assert first == again == {"mimeType": "image/png", "path": str(folder / "images" / (hashlib.sha256(png()).hexdigest() + ".png"))}
    assert other["path"] != first["path"] and sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, Path(other["path"]).name])
    assert path.read_bytes() == png()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_an_image_no_provider_takes_is_refused_and_nothing_is_written(tmp_path):
    folder = tmp_path / "conversations" / "app-0123"
    with pytest.raises(ImageError, match=r"the image is 3\.75 MiB, more than the 3\.75 MiB a provider takes"):
        store_image(folder, "image/png", png() + b"\0" * MAX_FILE)
    with pytest.raises(ImageError, match="image/bmp is not an image type a provider takes"):
        store_image(folder, "image/bmp", b"BM" + b"\0" * 40)
    with pytest.raises(ImageError, match="the bytes are not image/jpeg but image/png"):
        store_image(folder, "image/jpeg", png())
    with pytest.raises(ImageError, match="not base64"):
        decode_image("image/png", "iVBOR w0KGgo=")
    assert not folder.exists()


def test_images_are_not_stored_through_a_symlink(tmp_path):
    folder = tmp_path / "conversations" / "app-0123"
    folder.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (folder / "images").symlink_to(elsewhere)
    with pytest.raises(OSError, match="is a symlink"):
        store_image(folder, "image/png", png())
    assert list(elsewhere.iterdir()) == []


def test_an_image_given_again_counts_as_given_lately(tmp_path):
    folder = tmp_path / "conversations" / "app-0123"
    path = Path(store_image(folder, "image/png", png())["path"])
    os.utime(path, (time.time() - 2 * GIVEN_LATELY,) * 2)
    store_image(folder, "image/png", png())
    assert path.stat().st_mtime > time.time() - 60


# -- a turn with images --------------------------------------------------------------------------
async def test_the_turn_carries_the_image_by_path_and_a_new_host_continues_with_it(project):
    add_plugin(project, "scripted")
    write_script(project, RECORD)
    folder = folder_agent(project, SEEING)
    result = await folder.turn("what is in this picture?", images=[given(png())])
    assert (result["reply"], result["error"]) == ("a red picture", None)

    [fetch] = fetches(project)
    asked = fetch["messages"][-1]
    [image] = asked["images"]
    kept = ConversationStore(project).directory / "images" / (hashlib.sha256(png()).hexdigest() + ".png")
    assert (asked["role"], asked["content"], image) == ("user", "what is in this picture?", {"mimeType": "image/png", "path": str(kept)})
    assert kept.read_bytes() == png()

    [entry] = (await stored.transcript(folder))["entries"]
    assert entry["images"] == [image]
    stored_text = ConversationStore(project).path(folder.current.id).read_text()
    assert base64.b64encode(png()).decode() not in stored_text  # the bytes are in one file, not in the conversation

    again = folder_agent(project, SEEING)
    await again.ready()
    assert again.current.id == folder.current.id
    assert (await again.context())["messages"][1]["images"] == [image]


async def test_deleting_a_conversation_removes_the_images_only_it_named(project):
    add_plugin(project, "scripted")
    write_script(project, RECORD * 3)
    folder = folder_agent(project, SEEING)
    await folder.turn("these two?", images=[given(png()), given(png(width=3))])
    first = folder.current.id
    await stored.new_conversation(folder)
    await folder.turn("and this one?", images=[given(png(width=3))])
    images = ConversationStore(project).directory / "images"
    only_first, shared = (images / (hashlib.sha256(picture).hexdigest() + ".png") for picture in (png(), png(width=3)))
    running = store_image(ConversationStore(project).directory, "image/png", png(width=5))  # a turn not stored yet
    for path in (only_first, shared):  # given two hours ago
        os.utime(path, (time.time() - 2 * GIVEN_LATELY,) * 2)

    await stored.delete_conversation(folder, first)
    assert not only_first.exists() and shared.exists() and Path(running["path"]).exists()
    assert (await folder.context())["messages"][1]["images"] == [{"mimeType": "image/png", "path": str(shared)}]

    await stored.delete_conversation(folder, folder.current.id)
    assert not shared.exists() and Path(running["path"]).exists()  # given lately: it stays


async def test_with_history_off_the_image_goes_as_data_and_nothing_is_written(project):
    add_plugin(project, "scripted")
    write_script(project, RECORD)
    folder = folder_agent(project, {**SEEING, "history": False})
    await folder.turn("what is in this picture?", images=[given(png())])
    assert fetches(project)[0]["messages"][-1]["images"] == [given(png())]
    assert not ConversationStore(project).directory.exists()


async def test_a_bad_image_given_to_the_turn_is_refused_naming_it(project):
    add_plugin(project, "scripted")
    folder = folder_agent(project, SEEING)
    with pytest.raises(BadRequest, match=r"images\[1\]: the bytes are not image/png"):
        await folder.turn("these?", images=[given(png()), given(b"GIF89a" + b"\0" * 20)])


async def test_a_provider_that_cannot_take_images_refuses_the_turn_and_the_conversation_goes_on(project, fake_server, monkeypatch):
    monkeypatch.setenv("LLAMACPP_BASE_URL", f"{fake_server.url}/v1")
    folder = folder_agent(project, {"provider": "llamacpp", "model": "local"})
    refused = await folder.turn("what is in this picture?", images=[given(png())])
    assert refused["reply"].startswith('Error: provider "llamacpp" cannot take images; set LLAMACPP_IMAGES=true')
    assert model_requests(fake_server.requests) == []  # asked its window, never for an answer

    answered = await folder.turn("then tell me a joke")
    assert answered["error"] is None
    request = next(request for request in fake_server.requests if request.path.endswith("/chat/completions"))
    sent = request.json["messages"]
    assert "image_url" not in json.dumps(sent)
    earlier = next(message for message in sent if message["role"] == "user" and message["content"].startswith("what is in"))
    assert earlier["content"].endswith("[1 image(s) left out: this provider cannot take images]")


# -- read of an image file -----------------------------------------------------------------------
READ_PICTURE = [
    [{"type": "doing", "id": "r1", "name": "read", "arguments": {"path": "shot.png"}}],
    [{"type": "record"}, {"type": "saying", "text": "seen"}],
]


async def test_read_of_an_image_gives_it_to_a_provider_that_takes_images(project):
    add_plugin(project, "scripted")
    write_script(project, READ_PICTURE)
    (project / "shot.png").write_bytes(png())
    folder = folder_agent(project, SEEING)
    await folder.turn("look at shot.png")
    result = fetches(project)[0]["messages"][-1]
    assert result["role"] == "tool"
    assert json.loads(result["content"]) == {"ok": True, "path": "shot.png", "image": True, "mimeType": "image/png", "bytes": len(png())}
    assert result["images"] == [{"mimeType": "image/png", "path": str(project / "shot.png")}]
    [call] = (await stored.transcript(folder))["entries"][0]["tools"]
    assert (call["ok"], call["summary"]) == (True, f"image/png, {len(png())} bytes")


async def test_read_of_an_image_with_a_provider_that_cannot_take_images_says_so(project):
    add_plugin(project, "scripted")
    write_script(project, READ_PICTURE)
    (project / "shot.png").write_bytes(png())
    folder = folder_agent(project, {"workspacePlugins": True, "provider": "scripted"})
    await folder.turn("look at shot.png")
    result = fetches(project)[0]["messages"][-1]
    assert "images" not in result
    assert json.loads(result["content"]) == {
        "ok": False,
        "error": "shot.png is an image (image/png) and this provider cannot take images, so it cannot be read",
    }


async def test_read_of_an_image_outside_the_workspace_is_refused(project, tmp_path):
    add_plugin(project, "scripted")
    outside = tmp_path / "outside.png"
    outside.write_bytes(png())
    (project / "shot.png").symlink_to(outside)
    write_script(project, READ_PICTURE)
    folder = folder_agent(project, SEEING)
    await folder.turn("look at shot.png")
    result = fetches(project)[0]["messages"][-1]
    assert "images" not in result and "is outside the workspace" in json.loads(result["content"])["error"]
