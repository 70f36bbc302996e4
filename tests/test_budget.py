"""The context budget: what one fetch sends fits ``contextTokens``; the oldest turns go first, the
system prompt and the current turn stay, a tool result over a quarter of the budget is cut with a
marker, the provider's own tokenizer is used when it has one, and the client is told."""

from __future__ import annotations

import json

import pytest

from elelem_lsp.agent.budget import (
    DEFAULT_CONTEXT_TOKENS,
    estimate_tokens,
    fit,
    oldest_turns,
    split_turns,
    total_tokens,
)
from elelem_lsp.agent.history import exchange
from elelem_lsp.agent.messages import assistant, system, tool_result, user
from elelem_lsp.agent.session import Session
from elelem_lsp.agent.workspace import Workspace
from elelem_lsp.providers.windows import model_window


class Recording:
    """Says one reply per fetch (reading a file when asked) and keeps what each fetch was sent."""

    def __init__(self, reads: dict[int, str] | None = None, tool: str = "read") -> None:
        self.sent: list[tuple[list, list]] = []
        self.reads = reads or {}
        self.tool = tool

    async def fetch(self, messages, tools, emit):
        self.sent.append(([dict(m) for m in messages], tools))
        turn = sum(m["role"] == "user" for m in messages)
        if messages[-1]["role"] != "tool" and len(self.sent) in self.reads:
            arguments = {"path": self.reads[len(self.sent)], **({"pattern": "text"} if self.tool == "grep" else {})}
            emit({"type": "doing", "id": "c1", "name": self.tool, "arguments": arguments})
        else:
            emit({"type": "saying", "text": f"reply {turn} " + "r" * 300})


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "README.md").write_text("# readme\n")
    return Workspace(tmp_path)


def sent_tokens(messages, tools) -> int:
    """The tokens of a fetch by the estimate, its tools as the APIs' clients send them (JSON without spaces)."""
    tools_json = json.dumps(tools, ensure_ascii=False, separators=(",", ":"))
    return total_tokens(messages, estimate_tokens) + total_tokens([system(tools_json)], estimate_tokens)


async def test_a_300_turn_conversation_never_sends_more_than_the_budget_and_drops_the_oldest(ws):
    provider = Recording()
    session = Session(provider, ws)
    session.context_setting = 8000
    events = []
    for n in range(300):
        await session.turn(f"prompt {n} " + "p" * 600, events.append)
    assert len(session.history) == 600  # the history keeps everything; only what is sent is cut
    for messages, tools in provider.sent:
        assert sent_tokens(messages, tools) <= 8000
    last, _ = provider.sent[-1]
    assert last[0]["role"] == "system" and last[-1]["content"].startswith("prompt 299 ")
    prompts = [m["content"].split()[1] for m in last if m["role"] == "user"]
    first_kept = int(prompts[0])
    assert prompts == [str(n) for n in range(first_kept, 300)]  # the newest kept, in order, none skipped
    assert 250 < first_kept < 295
    # and it is as full as it may be: one turn more would not have fitted
    assert sent_tokens(last, provider.sent[-1][1]) + total_tokens(session.history[2 * first_kept - 2: 2 * first_kept], estimate_tokens) > 8000
    context = [e for e in events if e["type"] == "context"]
    assert context[-1] == {"type": "context", "tokens": context[-1]["tokens"], "budget": 8000,
                           "leftOut": first_kept, "shortened": 0,
                           "text": f"{first_kept} earlier turns left out to fit 8,000 tokens"}
    assert context[-1]["tokens"] <= 8000
    assert len(context) < 300  # told only for turns that left some out, once each


async def test_under_budget_nothing_is_left_out_and_nothing_is_said(ws):
    provider = Recording()
    session = Session(provider, ws)
    events = []
    for n in range(3):
        await session.turn(f"prompt {n}", events.append)
    assert [e["type"] for e in events] == ["saying"] * 3
    assert [m["content"] for m in provider.sent[-1][0][1:]] == [m["content"] for m in session.history[:4]] + ["prompt 2"]


async def test_a_large_tool_result_is_cut_with_a_marker_and_the_model_told(ws, tmp_path):
    # 4,000 matching lines, so long that even the matches grep shows for the room left are too many
    (tmp_path / "big.txt").write_text(("line of text " + "x" * 300 + "\n") * 4000)
    provider = Recording(reads={1: "big.txt"}, tool="grep")
    session = Session(provider, ws)
    session.context_setting = 8000
    events = []
    await session.turn("search the big file", events.append)
    messages, tools = provider.sent[-1]
    result = messages[-1]
    assert result["role"] == "tool"
    assert estimate_tokens(result["content"]) <= (8000 - session._reserve(tools)) // 4
    answer = json.loads(result["content"])  # still the tool's JSON: its list of matches is what was cut
    shown = answer["matches_shown"]
    assert answer["ok"] is True and 0 < len(answer["matches"]) < shown < 200 and answer["matches_found"] == 4000
    assert answer["more"].startswith(f"{shown} of 4000 matching lines shown: narrow the pattern")
    assert answer["shortened"].endswith(f"{shown - len(answer['matches'])} of {shown} matches cut to fit the context window]")
    [context] = [e for e in events if e["type"] == "context"]
    assert (context["leftOut"], context["shortened"]) == (0, 1)
    assert sent_tokens(messages, tools) <= 8000


async def test_the_current_turn_stays_even_when_it_alone_is_over(ws):
    provider = Recording()
    session = Session(provider, ws)
    session.context_setting = 2000
    await session.turn("small one")
    await session.turn("huge " + "h" * 20000)
    last, _ = provider.sent[-1]
    assert [m["role"] for m in last] == ["system", "user"] and last[-1]["content"].startswith("huge")


async def test_the_providers_tokenizer_is_used_when_it_has_one(ws):
    class Counting(Recording):
        def count_tokens(self, text: str) -> int:
            return len(text.split())  # one token a word: far fewer than the estimate

    provider = Counting()
    session = Session(provider, ws)
    session.context_setting = 4000
    for n in range(20):
        await session.turn(f"prompt {n} " + "p " * 100)
    # by the estimate (3 characters a token) 20 turns are far over; by words they fit
    assert sent_tokens(*provider.sent[-1]) > 4000
    assert len(provider.sent[-1][0]) == 1 + 2 * 19 + 1


def test_fit_leaves_out_whole_turns_oldest_first():
    head = [system("s" * 30)]
    history = [*exchange("a" * 300, "b" * 300), *exchange("c" * 300, "", cancelled=True), *exchange("d" * 300, "e" * 300)]
    current = [user("now"), assistant("", [{"id": "1", "name": "read", "arguments": {}}]), tool_result("1", "x" * 30)]
    everything = total_tokens(head + history + current, estimate_tokens)
    assert fit(head, history, current, everything, estimate_tokens).left_out == 0
    fitted = fit(head, history, current, everything - 1, estimate_tokens)
    assert fitted.left_out == 1 and fitted.messages == head + history[2:] + current
    fitted = fit(head, history, current, everything - 250, estimate_tokens)
    assert fitted.left_out == 2 and fitted.messages == head + history[3:] + current  # the cancelled turn is one message
    assert fit(head, history, current, 10, estimate_tokens).messages == head + current
    assert [len(turn) for turn in split_turns(history)] == [2, 1, 2]


def test_the_oldest_turns_that_fit_are_taken_and_one_too_large_alone_is_cut_to_fit():
    turns = [exchange(f"turn {n} " + "x" * 600, "ok") for n in range(4)]  # about 210 tokens each
    kept, taken = oldest_turns(turns, 500, estimate_tokens)
    assert taken == 2 and kept == turns[0] + turns[1]
    huge = exchange("big " + "y" * 30_000, "z" * 30_000)
    kept, taken = oldest_turns([huge, *turns], 500, estimate_tokens)
    assert taken == 1 and total_tokens(kept, estimate_tokens) <= 500
    assert kept[0]["content"].startswith("big y") and kept[0]["content"].endswith("characters cut to fit the context window]")


def test_a_result_that_is_not_json_is_cut_as_text_and_a_small_one_is_left_alone():
    plain = tool_result("1", "x" * 9000)
    cut = fit([], [], [plain], 4000, estimate_tokens).messages[0]["content"]
    assert cut.startswith("xxx") and cut.endswith("of 9,000 characters cut to fit the context window]")
    assert estimate_tokens(cut) <= 1000
    many_fields = tool_result("2", json.dumps({f"k{n}": "v" * 40 for n in range(200)}))  # no one text is the bulk
    cut = fit([], [], [many_fields], 4000, estimate_tokens).messages[0]["content"]
    assert estimate_tokens(cut) <= 1000 and cut.endswith("characters cut to fit the context window]")
    matches = [{"path": "big.txt", "line": n, "text": "lorem ipsum " * 40} for n in range(200)]
    listing = tool_result("4", json.dumps({"ok": True, "matches": matches, "matches_found": 200}))
    cut = json.loads(fit([], [], [listing], 8000, estimate_tokens).messages[0]["content"])
    assert cut["matches"] == matches[: len(cut["matches"])] and 0 < len(cut["matches"]) < 200
    assert cut["shortened"] == f"[… {200 - len(cut['matches'])} of 200 matches cut to fit the context window]"
    assert cut["matches_found"] == 200
    small = tool_result("3", "y" * 100)
    assert fit([], [], [small], 4000, estimate_tokens).messages == [small]


def test_the_estimate_is_ascii_over_the_measured_ratio_and_a_token_for_any_other_character():
    assert estimate_tokens("") == 0
    assert estimate_tokens("x" * 300) == 100  # 3 characters of ASCII a token
    assert estimate_tokens("上下文预算" * 20) == 100  # CJK: a token each, not a third of one
    assert estimate_tokens("abc" + "é") == 2


def test_the_budget_is_the_setting_else_the_provider_else_the_models_window_less_the_reply_else_32000(ws):
    class Plain(Recording):
        pass

    class Windowed(Recording):
        context_tokens = 2048

    class Capped(Recording):
        max_tokens = 16_000

    session = Session(Plain(), ws)
    assert session.context_tokens == DEFAULT_CONTEXT_TOKENS == 32000
    session.model_window = 128_000
    assert session.context_tokens == 128_000 - 4096 - 12_800  # room for a reply, and a margin
    session.model_window = 8192
    assert session.context_tokens == 8192 - 2048 - 819  # a small window keeps three quarters at most
    session.provider = Capped()
    session.model_window = 128_000
    assert session.context_tokens == 128_000 - 16_000 - 12_800  # the provider's own max_tokens
    session.provider = Windowed()
    assert session.context_tokens == 2048
    session.context_setting = 5000
    assert session.context_tokens == 5000  # the setting as the person gave it


@pytest.mark.parametrize("model, window", [
    ("gpt-4o", 128_000), ("gpt-4o-mini-2024-07-18", 128_000), ("gpt-4.1", 1_047_576), ("gpt-4", 8_192),
    ("claude-sonnet-4-5", 200_000), ("claude-sonnet-4-5@20250929", 200_000), ("anthropic/claude-3.5-sonnet", 200_000),
    ("gemini-2.5-flash", 1_048_576), ("llama3.2:3b", 8_192), ("meta-llama/Llama-3.3-70B-Instruct-Turbo", 8_192),
    ("gpt-oss:latest", 131_072), ("my-finetune", None), ("", None), (None, None), ("xclaude", None),
])
def test_known_model_windows(model, window):
    assert model_window(model) == window


@pytest.mark.parametrize("budget", [2000, 4096, 8192])
async def test_over_many_turns_the_prompt_and_the_latest_turns_stay_and_the_oldest_go_first(ws, budget):
    provider = Recording()
    session = Session(provider, ws)
    session.context_setting = budget
    for n in range(150):
        await session.turn(f"prompt {n} " + "p" * 200)  # a few hundred characters each way
        messages, tools = provider.sent[-1]
        assert sent_tokens(messages, tools) <= budget
        assert messages[-1]["content"].startswith(f"prompt {n} ")  # the current prompt is always there
        kept = [int(m["content"].split()[1]) for m in messages if m["role"] == "user"][:-1]
        assert kept == list(range(n - len(kept), n))  # the latest earlier turns, none skipped: the oldest went
        assert len(kept) >= min(n, 2)  # at least the last two, however small the window
        replies = [m["content"] for m in messages if m["role"] == "assistant"]
        assert len(replies) == len(kept) and all(r.startswith("reply ") for r in replies)


@pytest.mark.parametrize(("budget", "fewer"), [(2000, True), (32_000, False)])
async def test_greps_matches_shrink_with_the_room_left_and_the_result_says_how_to_see_more(ws, tmp_path, budget, fewer):
    (tmp_path / "big.txt").write_text("line of text\n" * 4000)
    provider = Recording(reads={1: "big.txt"}, tool="grep")
    session = Session(provider, ws)
    session.context_setting = budget
    events = []
    await session.turn("search the big file", events.append)
    messages, tools = provider.sent[-1]
    answer = json.loads(messages[-1]["content"])
    assert (answer["matches_shown"] < 200) == fewer and len(answer["matches"]) == answer["matches_shown"]
    assert answer["more"] == (
        f"{answer['matches_shown']} of 4000 matching lines shown: narrow the pattern, path or glob to see the others, "
        "or read a file with offset at a match"
    )
    assert "shortened" not in answer and not [e for e in events if e["type"] == "context"]  # sized, not cut blind
    assert sent_tokens(messages, tools) <= budget


@pytest.mark.parametrize("budget", [2000, 4096])
async def test_in_a_small_window_read_shows_fewer_lines_says_how_to_read_on_and_the_latest_turns_stay(ws, tmp_path, budget):
    (tmp_path / "long.txt").write_text("".join(f"row {n} " + "x" * 40 + "\n" for n in range(1, 2001)))
    provider = Recording(reads={3: "long.txt"})
    session = Session(provider, ws)
    session.context_setting = budget
    await session.turn("first question " + "a" * 300)
    await session.turn("second question " + "b" * 300)
    events = []
    await session.turn("read long.txt", events.append)
    messages, tools = provider.sent[-1]
    answer = json.loads(messages[-1]["content"])
    first, last = answer["lines"]
    assert first == 1 and 5 < last < 2000 and answer["next_offset"] == last + 1
    assert answer["content"].endswith(f"[lines 1-{last} of 2000 shown; read again with offset={last + 1} to continue]")
    assert not [e for e in events if e["type"] == "context"]  # sized to the room, nothing cut or left out
    asked = [m["content"] for m in messages if m["role"] == "user"]
    assert [a.split()[0] for a in asked] == ["first", "second", "read"]  # the earlier turns kept their share
    assert sent_tokens(messages, tools) <= budget
