#!/usr/bin/env python3
"""Deterministic generator of realistic Pi coding-agent session directories.

    python3 datasets/generate.py --out DIR --seed S (--sessions N | --bytes SIZE) [--scale small|realistic]

Writes DIR/--<encoded cwd>--/<ISO time>_<session id>.jsonl files the way Pi 1.6.0 writes them
(JavaScript JSON.stringify formatting and key order), next to some of them the child sessions and
transcript artifacts of the pi-subagents extension, and DIR/manifest.json describing what was
injected into every file and which distinct billed API calls the corpus holds (`truth`). Same
arguments, same bytes. Python 3.11 standard library only.
See datasets/README.md for the feature list and the rules of `truth`.
"""

from __future__ import annotations

import argparse
import base64
import bisect
import json
import math
import os
import random
import re
import shutil
import sys
import time
import multiprocessing
from collections import Counter, deque

GENERATOR = "pisa-datasets/generate.py"
GENERATOR_VERSION = 5
HOME = "/Users/mira"
SESSIONS_ROOT = HOME + "/.pi/agent/sessions"  # what parentSession paths point into

# --------------------------------------------------------------------------------------------
# JSON exactly as JavaScript's JSON.stringify writes it
# --------------------------------------------------------------------------------------------

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode
# Usage objects hold floats; they are serialised by hand (js_num) and spliced in through this
# placeholder so that every float is printed the way JavaScript prints it (0.00005, not 5e-05).
USAGE_PH = "\x00usage\x00"
_USAGE_PH_JSON = '"\\u0000usage\\u0000"'


def dumps(obj, usage_json=None):
    s = _encode(obj)
    if usage_json is not None:
        s = s.replace(_USAGE_PH_JSON, usage_json, 1)
    return s


class Txt:
    """A text taken from a pool, already escaped for JSON and encoded as UTF-8 (`b`, without
    quotes), with its length in characters (`n`). Escaping and encoding the big texts of a corpus
    (tool output, file contents, images) once per pool instead of once per use is most of the
    generator's speed. dumpb() splices them into the line; raw() gives the text itself."""

    __slots__ = ("b", "n", "_r")

    def __init__(self, b, n, r):
        self.b, self.n, self._r = b, n, r  # r: the text, or (EPool, start, count)

    def raw(self):
        r = self._r
        return r if isinstance(r, str) else r[0].raw(r[1], r[2])

    def head(self, k):
        r = self._r
        if isinstance(r, str):
            return r[:k]
        return r[0].raw(r[1], min(k, r[2]))

    @staticmethod
    def of(text):
        return Txt(_encode(text)[1:-1].encode("utf-8"), len(text), text)


def txt_cat(*parts):
    """A Txt made of Txt and str parts."""
    bs = [p.b if type(p) is Txt else _encode(p)[1:-1].encode("utf-8") for p in parts]
    return Txt(b"".join(bs), sum(tlen(p) for p in parts), "".join(p.raw() if type(p) is Txt else p for p in parts))


def tlen(x):
    return x.n if type(x) is Txt else len(x)


class EPool:
    """A text pool with its JSON-escaped UTF-8 form and the byte offset of every character, kept
    sparse: only the characters whose escaped UTF-8 form is not one byte are listed."""

    def __init__(self, text):
        self.s = text
        self.L = len(text)
        self.e = _encode(text)[1:-1].encode("utf-8")
        pos, cum = [], [0]
        extra = 0
        for m in re.finditer(r'[^\x20\x21\x23-\x5b\x5d-\x7e]', text):
            c = m.group()
            extra += len(_encode(c).encode("utf-8")) - 3
            pos.append(m.start())
            cum.append(extra)
        self.pos, self.cum = pos, cum
        self.mv = memoryview(self.e)
        assert self.off(self.L) == len(self.e)

    def off(self, i):
        return i + self.cum[bisect.bisect_left(self.pos, i)]

    def raw(self, start, n):
        if start + n <= self.L:
            return self.s[start:start + n]
        return "".join(self.raw(a, k) for a, k in self._spans(start, n))

    def _spans(self, start, n):
        while n > 0:
            k = min(n, self.L - start)
            yield start, k
            start, n = 0, n - k

    def take(self, start, n):
        """The Txt of n characters from `start`, wrapping around at the end of the pool (the
        bytes are a view into the pool: no copy until the line is joined)."""
        if start + n <= self.L:
            b = self.mv[self.off(start):self.off(start + n)]
        else:
            b = b"".join(self.mv[self.off(a):self.off(a + k)] for a, k in self._spans(start, n))
        return Txt(b, n, (self, start, n))


_TX = []  # escaped texts met by dumpb's encoder, in output order


def _tx_default(o):
    if type(o) is Txt:
        _TX.append(o.b)
        return "\x00"
    raise TypeError("cannot serialise %r" % type(o))


_encode_tx = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False, default=_tx_default).encode


def dumpb(obj, usage_json=None, nl=False):
    """dumps() as UTF-8 bytes, with Txt values spliced in; nl: with a final newline."""
    s = _encode_tx(obj)
    if usage_json is not None:
        s = s.replace(_USAGE_PH_JSON, usage_json, 1)
    if nl:
        s += "\n"
    b = s.encode("utf-8")
    if _TX:
        parts = b.split(b"\\u0000")
        if len(parts) != len(_TX) + 1:
            _TX.clear()
            raise AssertionError("a placeholder left in a line")
        out = [parts[0]]
        for t, p in zip(_TX, parts[1:]):
            out.append(t)
            out.append(p)
        _TX.clear()
        b = b"".join(out)
    elif usage_json is None and b"\\u0000" in b:
        raise AssertionError("a placeholder left in a line")
    return b


def jlen(obj):
    """About the JSON.stringify length of obj (UTF-8 bytes, for estimates only)."""
    return len(dumpb(obj))


def js_num(x):
    """Number::toString of ECMAScript for an int or a finite float."""
    if isinstance(x, int):
        return str(x)
    r = repr(x)
    if "e" not in r:  # 1e-4 <= |x| < 1e16: Python and JavaScript print the same digits
        return r[:-2] if r.endswith(".0") else r
    if x == 0:
        return "0"
    if x == int(x) and abs(x) < 1e21:
        return str(int(x))
    r = repr(x)
    neg = r.startswith("-")
    if neg:
        r = r[1:]
    if "e" in r:
        mant, exp = r.split("e")
        exp = int(exp)
    else:
        mant, exp = r, 0
    if "." in mant:
        ip, fp = mant.split(".")
    else:
        ip, fp = mant, ""
    digits = (ip + fp).lstrip("0")
    # value = 0.<digits> * 10^n
    lead_zeros = len(ip + fp) - len((ip + fp).lstrip("0"))
    n = len(ip) + exp - lead_zeros
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        s = digits + "0" * (n - k)
    elif 0 < n <= 21:
        s = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        s = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        s = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return "-" + s if neg else s


def iso(ms):
    s, m = divmod(ms, 1000)
    t = time.gmtime(s)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, m)


def ms_of(y, mo, d):
    import calendar

    return calendar.timegm((y, mo, d, 0, 0, 0)) * 1000


def folder_for_cwd(cwd):
    return "--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", cwd)) + "--"


# --------------------------------------------------------------------------------------------
# Models, prices (USD per million tokens: input, output, cacheRead, cacheWrite), tiers
# --------------------------------------------------------------------------------------------


class Model:
    __slots__ = ("provider", "id", "api", "cost", "window", "style", "reasoning", "tiers", "eff")

    def __init__(self, provider, mid, api, cost, window, style, reasoning=True, tiers=()):
        self.provider, self.id, self.api, self.cost = provider, mid, api, cost
        self.window, self.style, self.reasoning, self.tiers = window, style, reasoning, tiers
        # what sessions actually fill before Pi compacts (1M-token windows are rarely used up)
        self.eff = min(window, 272000)


MODELS = [
    # weight, model
    (22, Model("anthropic", "claude-sonnet-4-5", "anthropic-messages", (3, 15, 0.3, 3.75), 200000, "anthropic")),
    (14, Model("anthropic", "claude-opus-4-5", "anthropic-messages", (5, 25, 0.5, 6.25), 200000, "anthropic")),
    (4, Model("anthropic", "claude-haiku-4-5", "anthropic-messages", (1, 5, 0.1, 1.25), 200000, "anthropic")),
    (2, Model("anthropic", "claude-opus-4-1", "anthropic-messages", (15, 75, 1.5, 18.75), 200000, "anthropic")),
    (10, Model("openai", "gpt-5.1-codex", "openai-responses", (1.25, 10, 0.125, 0), 400000, "openai")),
    (5, Model("openai", "gpt-5", "openai-responses", (1.25, 10, 0.125, 0), 400000, "openai")),
    (3, Model("openai", "gpt-5-mini", "openai-responses", (0.25, 2, 0.025, 0), 400000, "openai")),
    (2, Model("openai", "gpt-4o", "openai-responses", (2.5, 10, 1.25, 0), 128000, "openai", reasoning=False)),
    (6, Model("google", "gemini-2.5-pro", "google-generative-ai", (1.25, 10, 0.31, 0), 1000000, "google",
              tiers=((200000, (2.5, 15, 0.625, 0)),))),
    (3, Model("google", "gemini-2.5-flash", "google-generative-ai", (0.3, 2.5, 0.075, 0), 1000000, "google")),
    (4, Model("openrouter", "anthropic/claude-sonnet-4.5", "openai-completions", (3, 15, 0.3, 3.75), 200000, "completions")),
    (3, Model("openrouter", "qwen/qwen3-coder", "openai-completions", (0.22, 0.95, 0, 0), 262144, "completions")),
    (2, Model("openrouter", "openrouter/auto", "openai-completions", (1, 4, 0.1, 0), 200000, "completions")),
    (2, Model("xai", "grok-code-fast-1", "openai-completions", (0.2, 1.5, 0.02, 0), 256000, "completions")),
    (1, Model("ollama", "qwen2.5-coder:32b", "openai-completions", (0, 0, 0, 0), 32768, "completions", reasoning=False)),
    (2, Model("github-copilot", "claude-sonnet-4.6", "anthropic-messages", (3, 15, 0.3, 3.75), 200000, "anthropic")),
]


def _registry_prices():
    """Pi's price table as pisa embeds it (pi-ai 1.6.0's registry): the prices Pi writes into
    `usage.cost` for the models it knows. Models it does not know (retired ids, local models)
    keep the prices above, as if an older Pi or a custom provider had priced them."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "pricing", "pi-ai.json")
    try:
        with open(path, encoding="utf-8") as f:
            table = json.load(f)
    except OSError:
        return {}
    out = {}
    for m in table["models"]:
        c = m["cost"]
        rates = lambda r: (r["input"], r["output"], r["cacheRead"], r["cacheWrite"])
        out[(m["provider"], m["id"])] = (rates(c), tuple((t["inputTokensAbove"], rates(t)) for t in c.get("tiers", ())))
    return out


_REGISTRY = _registry_prices()
for _, _m in MODELS:
    if (_m.provider, _m.id) in _REGISTRY:
        _m.cost, _m.tiers = _REGISTRY[(_m.provider, _m.id)]
MODEL_BY_KEY = {(m.provider, m.id): m for _, m in MODELS}
OPENROUTER_AUTO_TARGETS = ["anthropic/claude-sonnet-4.5", "openai/gpt-5", "google/gemini-2.5-pro", "deepseek/deepseek-chat-v3.1"]
ANTHROPIC_FALLBACKS = {"claude-opus-4-5": "claude-opus-4-1", "claude-sonnet-4-5": "claude-sonnet-4-20250514"}
VIRTUAL_MODELS = [("router", "auto"), ("openai-codex", "auto"), ("jev", "smart")]
V1_MODELS = ["claude-sonnet-4-5", "claude-opus-4-5", "gpt-5.1-codex"]
THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh"]


def calc_cost(model, inp, out, cr, cw, cw1h):
    """pi-ai calculateCost, operation for operation (JavaScript doubles == Python floats)."""
    rates = model.cost
    matched = -1
    tokens_in = inp + cr + cw
    for above, r in model.tiers:
        if tokens_in > above and above > matched:
            rates, matched = r, above
    long_w = cw1h or 0
    short_w = cw - long_w
    c_in = (rates[0] / 1000000) * inp
    c_out = (rates[1] / 1000000) * out
    c_cr = (rates[2] / 1000000) * cr
    c_cw = (rates[3] * short_w + rates[0] * 2 * long_w) / 1000000
    return c_in, c_out, c_cr, c_cw, c_in + c_out + c_cr + c_cw


def usage_json(model, inp, out, cr, cw, *, cw1h=None, reasoning=None, style=None, era="v3", total_override=None):
    """Serialise a Usage object with the key order the provider code in pi-ai produces."""
    style = style or model.style
    c_in, c_out, c_cr, c_cw, total = calc_cost(model, inp, out, cr, cw, cw1h)
    from_provider = None
    if total_override is not None:
        total, from_provider = total_override, True
    elif era == "v3" and style != "legacy":
        from_provider = False
    cost = '{"input":%s,"output":%s,"cacheRead":%s,"cacheWrite":%s,"total":%s%s}' % (
        js_num(c_in), js_num(c_out), js_num(c_cr), js_num(c_cw), js_num(total),
        "" if from_provider is None else ',"totalFromProvider":' + ("true" if from_provider else "false"))
    tt = inp + out + cr + cw
    if style == "legacy":  # v1-era files: no totalTokens at all
        return '{"input":%d,"output":%d,"cacheRead":%d,"cacheWrite":%d,"cost":%s}' % (inp, out, cr, cw, cost)
    if style == "anthropic":
        s = '{"input":%d,"output":%d,"cacheRead":%d,"cacheWrite":%d,"totalTokens":%d,"cost":%s' % (inp, out, cr, cw, tt, cost)
        if cw1h is not None:
            s += ',"cacheWrite1h":%d' % cw1h
        if reasoning is not None:
            s += ',"reasoning":%d' % reasoning
        return s + "}"
    # openai-responses, google, openai-completions
    return '{"input":%d,"output":%d,"cacheRead":%d,"cacheWrite":%d,"reasoning":%d,"totalTokens":%d,"cost":%s}' % (
        inp, out, cr, cw, reasoning or 0, tt, cost)


_USAGE_HEAD = re.compile(r'\{"input":(\d+),"output":(\d+),"cacheRead":(\d+),"cacheWrite":(\d+),')

ZERO_USAGE_V3 = ('{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,'
                 '"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}')
ZERO_USAGE_V1 = '{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}'

# --------------------------------------------------------------------------------------------
# Text pools: built once per run, sliced at random offsets (fast, deterministic)
# --------------------------------------------------------------------------------------------

WORDS = (
    "the a to of and in is it that for on with as this be are by at or from an not we you can will "
    "should would could function return value type error file test build module config session cache "
    "token parser entry compaction branch context message assistant user tool result usage cost model "
    "provider stream buffer index path leaf parent child tree node line byte offset struct enum trait "
    "impl async await promise callback handler event listener render terminal output input state mode "
    "refactor extract rename inline move delete update create read write edit grep find list fix bug "
    "issue commit diff patch merge rebase review plan step first then next finally because however "
    "instead actually probably maybe simply just also only still already again now here there where "
    "when why how what which who data frame schema column row table query filter group sort join "
    "benchmark profile allocation memory thread worker queue lock mutex channel signal retry timeout "
    "deterministic random seed fixture oracle golden snapshot migration version header timestamp"
).split()

NONASCII = [
    "日本語のテキストを確認します。", "中文测试内容，包含标点。", "한국어 문장도 포함됩니다.", "🚀 deploy done ✅",
    "family 👨\u200d👩\u200d👧\u200d👦 emoji", "flags 🇩🇪🇯🇵🇧🇷", "combining e\u0301 a\u0308 n\u0303 o\u0302",
    "zalgo z\u0336\u0317a\u0334\u0321l\u0337g\u0335o\u0338", "Ελληνικά γράμματα", "Русский текст для проверки",
    "العربية من اليمين", "עברית בדיקה", "naïve café façade jalapeño", "math ∑∫√∞≠≤ ∀x∈ℝ", "box ─│┌┐└┘├┤",
    "arrows → ← ↔ ⇒", "Straße Größe Maß", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕄𝕒𝕥𝕙 (astral)", "🤖🧠💡🔥🐛", "ＦＵＬＬ ＷＩＤＴＨ",
    "tab\there", "quote \"inside\" and back\\slash", "line\u2028separator", "nbsp\u00a0space", "zero\u200bwidth",
]

TS_LINES = [
    'import {{ {n1} }} from "./{f}.js";', "export function {n1}({v}: {T}): {T} {{", "\tconst {v} = await {n2}({v2});",
    '\tif (!{v}) throw new Error("{w} {w2} failed: ${{{v2}}}");', "\treturn {v}.map((x) => x.{v2});", "}}",
    "// {w} {w2} {w3}", "\t\t{v}.{n2}({v2}, {{ {v2}: true, limit: {k} }});", "export interface {T} {{",
    "\t{v}: string | null;", "\t{v2}?: number;", "\tfor (const {v} of {v2}s) {{", "\t\tyield* {n1}({v});",
    "const re = /^\\s*([a-z_]+)\\s*=\\s*\"(.*)\"$/;", "\tcase \"{w}\": return {k};",
    "\tconsole.log(`{w} ${{{v}}} → {w2}`);", "/** {w} {w2}: 说明 */",
]
RS_LINES = [
    "use crate::{f}::{{{T}, {n1}}};", "pub fn {n1}(&self, {v}: &{T}) -> Result<{T}> {{", "    let {v} = self.{n2}({v2})?;",
    '    println!("{{}} {w} {{:?}}", {v}, {v2});', "    Ok({v})", "}}", "/// {w} {w2} {w3}", "#[derive(Debug, Clone, PartialEq)]",
    "pub struct {T} {{", "    pub {v}: Vec<u8>,", "    match {v} {{", "        Some(x) => x.{n2}(),", "        None => return Err(Error::{T}),",
    "    }}", '    let re = Regex::new(r"^(\\d+)-(\\w+)$").unwrap();', "    // TODO: {w} {w2} — ほぼ完了",
]
PY_LINES = [
    "def {n1}({v}, {v2}={k}):", "    {v} = {n2}({v2})", '    return re.sub(r"\\s+", " ", {v})', "class {T}:",
    '    """{w} {w2} {w3}."""', "    for {v} in {v2}:", "        yield {v}.{n2}()", "import {f}", "# {w} {w2}",
    "    raise ValueError(f\"{w}: {{{v}!r}}\")",
]
LOG_LINES = [
    "\x1b[32m✓\x1b[0m {w} {w2} ({k} ms)", "\x1b[31m✗\x1b[0m {w} {w2} failed", "error[E0308]: mismatched types",
    "  --> src/{f}.rs:{k}:{k2}", "warning: unused variable: `{v}`", "npm WARN deprecated {f}@{k}.{k2}.0: {w} {w2}",
    "-rw-r--r--  1 mira  staff  {k}{k2} Dec  3 14:0{d} {f}.ts", "drwxr-xr-x  {d} mira  staff   {k} Jan 12 09:1{d} {f}",
    "commit {h}", "Author: Mira <mira@example.com>", "    {w} {w2} {w3}", "src/{f}.ts:{k}:{k2}: {w} {w2}",
    "test {n1}::{n2} ... ok", "test {n1}::{n2} ... FAILED", "    Finished `release` profile [optimized] target(s) in {k}.{d}s",
    "{k} passed, {d} failed, {k2} skipped", "M  src/{f}.ts", "?? {f}/", "+  {v} = {n2}({v2});", "-  {v} = {n1}();",
]
IDENT = ["parse", "load", "build", "render", "flush", "merge", "split", "scan", "emit", "visit", "apply", "resolve",
         "estimate", "project", "migrate", "index", "walk", "count", "format", "write"]
NOUNS = ["entry", "session", "frame", "usage", "tree", "path", "leaf", "line", "buffer", "model", "cost", "token",
         "record", "header", "summary", "edit", "label", "chunk", "worker", "state"]
TYPES = ["Entry", "Session", "Frame", "Usage", "Tree", "LeafId", "Record", "Header", "Summary", "Projection",
         "CostTotals", "Scanner", "ParseError", "Options"]
FILES = ["session-manager", "parser", "tree", "usage", "scan", "frame", "report", "export", "compaction", "cli",
         "agent-session", "messages", "tui-renderer", "main", "config", "lib", "utils/paths", "estimate"]


NOUNS_CAP = [w.capitalize() for w in NOUNS]
NW = len(WORDS)
assert (len(IDENT), len(NOUNS), len(TYPES), len(FILES)) == (20, 20, 14, 18)


class Pools:
    """Large pre-generated strings; every text in the corpus is a slice of one of them."""

    def __init__(self, seed, scale):
        rng = random.Random(f"pools:{seed}")
        self.rng = rng
        big = scale == "realistic"
        self.prose = self._prose(rng, 1_200_000 if big else 300_000)
        self.code = self._code(rng, 1_600_000 if big else 300_000)
        self.log = self._lines(rng, LOG_LINES, 600_000 if big else 150_000)
        self.b64 = base64.b64encode(rng.randbytes(1_500_000 if big else 300_000)).decode("ascii")
        alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        self.alnum = "".join(rng.choices(alnum, k=200_000))
        self.eprose, self.ecode, self.elog, self.eb64 = EPool(self.prose), EPool(self.code), EPool(self.log), EPool(self.b64)

    @staticmethod
    def _fill(rng, tmpl):
        r = rng.random
        return tmpl.format(
            n1=IDENT[int(r() * 20)] + NOUNS_CAP[int(r() * 20)], n2=IDENT[int(r() * 20)], v=NOUNS[int(r() * 20)],
            v2=NOUNS[int(r() * 20)], T=TYPES[int(r() * 14)], f=FILES[int(r() * 18)], w=WORDS[int(r() * NW)],
            w2=WORDS[int(r() * NW)], w3=WORDS[int(r() * NW)], k=1 + int(r() * 999), k2=int(r() * 100), d=int(r() * 10),
            h="%040x" % rng.getrandbits(160))

    def _prose(self, rng, n):
        out, size = [], 0
        while size < n:
            k = rng.randint(4, 18)
            s = " ".join(rng.choices(WORDS, k=k))
            s = s[0].upper() + s[1:] + rng.choice("....?!:")
            r = rng.random()
            if r < 0.05:
                s += " " + rng.choice(NONASCII)
            elif r < 0.08:
                s += " `" + rng.choice(IDENT) + "()`"
            elif r < 0.10:
                s = "\n\n## " + s.rstrip(".?!:") + "\n\n"
            elif r < 0.14:
                s = "\n- " + s
            elif r < 0.16:
                s += "\n\n```ts\n" + self._fill(rng, rng.choice(TS_LINES)) + "\n```\n"
            s += " "
            out.append(s)
            size += len(s)
        return "".join(out)

    def _code(self, rng, n):
        out, size = [], 0
        while size < n:
            lang = rng.choice((TS_LINES, TS_LINES, RS_LINES, PY_LINES))
            for _ in range(rng.randint(5, 40)):
                s = self._fill(rng, rng.choice(lang)) + "\n"
                out.append(s)
                size += len(s)
            out.append("\n")
        return "".join(out)

    def _lines(self, rng, tmpls, n):
        out, size = [], 0
        while size < n:
            s = self._fill(rng, rng.choice(tmpls)) + "\n"
            out.append(s)
            size += len(s)
        return "".join(out)

    @staticmethod
    def _slice(rng, pool, n):
        if n <= 0:
            return ""
        L = len(pool)
        if n >= L:
            reps = n // L + 2
            start = rng.randrange(L)
            return (pool * reps)[start:start + n]
        start = rng.randrange(L - n)
        return pool[start:start + n]

    def text(self, rng, n):
        """Prose of about n characters, starting at a word boundary."""
        pool = self.prose
        if n >= len(pool) - 64:
            return self._slice(rng, pool, n).strip() or "ok"
        start = rng.randrange(len(pool) - n - 64)
        sp = pool.find(" ", start, start + 40)
        if sp >= 0:
            start = sp + 1
        return pool[start:start + n].strip() or "ok"

    def code_text(self, rng, n):
        return self._slice(rng, self.code, n)

    def log_text(self, rng, n):
        return self._slice(rng, self.log, n)

    def b64_text(self, rng, n):
        n -= n % 4
        s = self._slice(rng, self.b64, n)
        return s[: len(s) - len(s) % 4]

    def alnum_text(self, rng, n):
        return self._slice(rng, self.alnum, n)

    # the same as Txt (see Txt): for the big texts
    def _take(self, rng, ep, n):
        if n <= 0:
            return Txt(b"", 0, "")
        if n >= ep.L:
            return ep.take(rng.randrange(ep.L), n)
        return ep.take(rng.randrange(ep.L - n), n)

    def text_t(self, rng, n):
        pool = self.prose
        if n >= len(pool) - 64:
            return self._take(rng, self.eprose, n)
        start = rng.randrange(len(pool) - n - 64)
        sp = pool.find(" ", start, start + 40)
        if sp >= 0:
            start = sp + 1
        a, z = start, start + n
        while a < z and pool[a].isspace():
            a += 1
        while z > a and pool[z - 1].isspace():
            z -= 1
        return self.eprose.take(a, z - a) if z > a else Txt.of("ok")

    def code_t(self, rng, n):
        return self._take(rng, self.ecode, n)

    def log_t(self, rng, n):
        return self._take(rng, self.elog, n)

    def b64_t(self, rng, n):
        n -= n % 4
        return self._take(rng, self.eb64, n)


# --------------------------------------------------------------------------------------------
# Tool catalog (declarations in the leading system message) and tool-call generation
# --------------------------------------------------------------------------------------------


def _obj(props, required):
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


TOOLS = {
    "read": {"name": "read", "description": "Read the contents of a file. Supports text files and images (jpg, png, gif, webp). Images are sent as attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit first). Use offset/limit for large files.",
             "parameters": _obj({"path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
                                 "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
                                 "limit": {"type": "number", "description": "Maximum number of lines to read"}}, ["path"])},
    "bash": {"name": "bash", "description": "Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to last 2000 lines or 50KB (whichever is hit first).",
             "parameters": _obj({"command": {"type": "string", "description": "Bash command to execute"},
                                 "timeout": {"type": "number", "description": "Timeout in seconds (optional, no default timeout)"}}, ["command"])},
    "edit": {"name": "edit", "description": "Edit a file by replacing exact text. The oldText must match exactly (including whitespace). Use this for precise, surgical edits.",
             "parameters": _obj({"path": {"type": "string", "description": "Path to the file to edit"},
                                 "edits": {"type": "array", "items": _obj({"oldText": {"type": "string"}, "newText": {"type": "string"}}, ["oldText", "newText"]),
                                           "minItems": 1}}, ["path", "edits"])},
    "write": {"name": "write", "description": "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.",
              "parameters": _obj({"path": {"type": "string"}, "content": {"type": "string"}}, ["path", "content"])},
    "grep": {"name": "grep", "description": "Search file contents for a regex pattern. Respects .gitignore.",
             "parameters": _obj({"pattern": {"type": "string"}, "path": {"type": "string"}, "glob": {"type": "string"},
                                 "ignoreCase": {"type": "boolean"}, "context": {"type": "number", "minimum": 0, "maximum": 10}}, ["pattern"])},
    "find": {"name": "find", "description": "Find files by glob pattern.",
             "parameters": _obj({"pattern": {"type": "string"}, "path": {"type": "string"}}, ["pattern"])},
    "ls": {"name": "ls", "description": "List directory contents.", "parameters": _obj({"path": {"type": "string"}}, [])},
    "web_search": {"name": "web_search", "description": "Search the web and summarise the results with a small model. Recherche sur le Web — 検索.",
                   "parameters": _obj({"query": {"type": "string"}, "options": _obj({"maxResults": {"type": "integer", "default": 5},
                                                                                      "recency": {"type": "string", "enum": ["day", "week", "month", "any"]}}, [])}, ["query"])},
    "subagent": {"name": "subagent", "description": "Delegate a self-contained task to a sub-agent with its own context window.",
                 "parameters": _obj({"task": {"type": "string"}, "model": {"type": "string"},
                                     "tools": {"type": "array", "items": {"type": "string"}}}, ["task"])},
    "todo": {"name": "todo", "description": "Maintain a todo list for the current task.",
             "parameters": _obj({"action": {"type": "string", "enum": ["add", "done", "list"]}, "text": {"type": "string"}}, ["action"])},
}
CORE_TOOLS = ["read", "bash", "edit", "write"]
EXTRA_TOOLS = ["grep", "find", "ls", "web_search", "subagent", "todo"]
TOOL_WEIGHTS = {"read": 30, "bash": 28, "edit": 18, "write": 5, "grep": 6, "find": 3, "ls": 3, "web_search": 3, "subagent": 2, "todo": 2}
TOOL_USAGE_TOOLS = {"web_search", "subagent"}

ERROR_MESSAGES = [
    "Request was aborted.",
    '400 {"type":"error","error":{"type":"invalid_request_error","message":"messages.12: `tool_use` ids were found without `tool_result` blocks immediately after"}}',
    "529 Overloaded", "fetch failed: ECONNRESET", "Rate limit exceeded. Please retry after 20s.",
    "Provider returned error: context_length_exceeded — 上限を超えました",
]

# --------------------------------------------------------------------------------------------
# Profiles: rates per scale
# --------------------------------------------------------------------------------------------


class Profile:
    def __init__(self, scale):
        self.scale = scale
        small = scale == "small"
        self.small = small
        # per user turn probabilities of side events
        self.ev = {
            "system_patch": 0.12 if small else 0.015,
            "model_change": 0.10 if small else 0.02,
            "virtual_model": 0.06 if small else 0.006,
            "thinking_change": 0.10 if small else 0.03,
            "cache_warm": 0.12 if small else 0.03,
            "usage_unknown": 0.06 if small else 0.006,
            "custom": 0.12 if small else 0.03,
            "custom_message": 0.12 if small else 0.02,
            "label": 0.10 if small else 0.01,
            "session_info": 0.08 if small else 0.008,
            "bash_exec": 0.12 if small else 0.03,
            "context_edit": 0.20 if small else 0.02,
            "context_edit_abandoned": 0.03 if small else 0.002,  # an edit, then a branch that leaves it behind
            "branch": 0.15 if small else 0.015,
            "compaction_random": 0.12 if small else 0.004,
            "user_image": 0.06 if small else 0.02,
        }
        # share of context edits whose target is off the active path / before the latest compaction's kept range
        self.ce_off_path = 0.15 if small else 0.1
        self.ce_compacted = 0.15 if small else 0.1
        self.tool_usage = 0.5 if small else 0.3  # web_search/subagent results with usage
        self.steps_mean = 2.0 if small else 4.4
        # a user message with a pasted log; an assistant message with a second and a third tool call
        self.paste = 0.04 if small else 0.12
        self.call2, self.call3 = (0.25, 0.1) if small else (0.3, 0.15)
        self.abort = 0.04 if small else 0.015
        self.error = 0.04 if small else 0.01
        self.length = 0.03 if small else 0.005
        self.think = 0.6
        # sizes (chars): median, sigma, cap
        if small:
            self.sz = {"user": (90, 0.8, 1200), "text": (160, 0.8, 1500), "final": (300, 0.8, 2500), "think": (200, 0.8, 1500),
                       "read": (500, 1.0, 6000), "bash": (250, 1.0, 4000), "summary": (400, 0.6, 2000), "image": (3000, 0.8, 24000),
                       "section": (200, 0.6, 800), "custom": (150, 0.8, 1200)}
        else:
            self.sz = {"user": (700, 1.1, 30000), "text": (170, 0.9, 8000), "final": (900, 0.8, 20000), "think": (350, 1.0, 16000),
                       "read": (2900, 1.2, 400000), "bash": (700, 1.5, 300000), "summary": (1800, 0.5, 12000),
                       "image": (60000, 1.0, 400000), "section": (1800, 0.8, 12000), "custom": (300, 1.0, 8000)}

    def session_target(self, rng):
        if self.small:
            return int(min(100_000, max(2_500, rng.lognormvariate(math.log(14_000), 0.9))))
        return int(min(57_000_000, max(6_000, rng.lognormvariate(math.log(330_000), 1.75))))


# --------------------------------------------------------------------------------------------
# One session file being written
# --------------------------------------------------------------------------------------------

PROJECTS = [
    (30, HOME + "/code/pisa"), (20, HOME + "/code/pi-mono"), (12, HOME + "/work/api-gateway"),
    (8, HOME + "/work/billing-service"), (6, HOME + "/Projekte/Straße-app"), (5, HOME + "/code/日本語-notes"),
    (4, HOME + "/code/my app"), (4, "/tmp/scratch"), (3, HOME), (3, "C:\\Users\\mira\\dev\\win-tool"),
    (2, HOME + "/code/game:engine"), (4, HOME + "/code/ml-experiments"), (2, HOME + "/code/ml/experiments"),
]

ERA_RANGES = {  # (start, end) of header timestamps per file flavour
    "v1": (ms_of(2025, 10, 1), ms_of(2025, 12, 10)),
    "v2": (ms_of(2025, 12, 10), ms_of(2026, 1, 10)),
    "v3legacy": (ms_of(2026, 1, 10), ms_of(2026, 3, 15)),
    "v3": (ms_of(2026, 3, 15), ms_of(2026, 6, 15)),
}

CONTEXT_KINDS = ("user", "assistant", "toolResult", "custom_message")


def weighted(rng, pairs):
    tot = sum(w for w, _ in pairs)
    x = rng.random() * tot
    for w, v in pairs:
        x -= w
        if x < 0:
            return v
    return pairs[-1][1]


def uuid4(rng):
    h = "%032x" % rng.getrandbits(128)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[rng.getrandbits(2)]}{h[17:20]}-{h[20:32]}"


def uuid7(rng, ms):
    h = "%012x" % (ms & ((1 << 48) - 1)) + "%020x" % rng.getrandbits(80)
    return f"{h[:8]}-{h[8:12]}-7{h[13:16]}-{'89ab'[rng.getrandbits(2)]}{h[17:20]}-{h[20:32]}"


class Session:
    """Builds the lines of one session file while tracking Pi's tree (leaf, active path)."""

    def __init__(self, gen, rng, era, cwd, start_ms, target):
        self.g, self.rng, self.P, self.pools = gen, rng, gen.P, gen.pools
        self.era = era  # v1 | v2 | v3legacy | v3
        self.cwd = cwd
        self.t = start_ms
        self.target = target
        self.lines = []
        self.size = 0
        self.ids = set()
        self.meta = {}  # id -> [parentId, kind, tokens, line index]
        self.order = []  # ids in file order
        self.leaf = None
        self.path = []
        self.pidx = {}
        self.ctx = 0  # estimated context tokens on the active path
        self.cached = 0  # provider cache prefix
        self.compactions = 0
        self.features = Counter()
        self.sys_sections = {}
        self.sys_tools = {}
        self.sys_content = []
        self.has_system = False
        self.thinking = "off"
        self.model = None
        self.virtual = None
        self.labels = {}  # targetId -> (label, timestamp) like Pi's labelsById
        self.omit_parent_once = False
        self.v1_index = 0  # v1: index of the next entry in the file's entry list (header = 0)
        self.v1_users = []
        self.long_cache = rng.random() < 0.25
        self.mult = 1.0
        self.header = None
        self.session_id = None
        self.parent_session = None
        self.kind = "session"
        self.fork_of = None
        self.inherited = None
        self._last_edit_target = None
        self.late_system = era == "v3legacy" and rng.random() < 0.3
        self.forced = {}  # turn number -> [event names] (showcase sessions)
        self.want = set()  # features to produce at the next opportunity (showcase sessions)
        self.quiet = False  # showcase sessions that only do their forced events
        self.comp_first_kept = {}  # compaction id -> its firstKeptEntryId
        # the truth of the billed calls (README, "Truth"): every usage this session writes gets a call id
        self.cid_prefix = None  # set by the generator: unique per session of the corpus
        self.ncalls = 0
        self.calls = {}  # call id -> (kind, timestamp, provider, model, input, output, cacheRead, cacheWrite, cost)
        self.line_calls = {}  # line index -> the call ids its usage stands for
        self.rel = None  # the file's path in the corpus
        self.msg_log = None  # subagent children: [(line index, message, usage json, entry ms)] of their messages
        self.sub_pending = []  # planned subagent calls: [(fraction of the target, number, spec)]
        self.sub_runs = []  # what the subagent calls of this file wrote (manifest `subagentRuns`)
        self.extra_files = []  # files written with this session: [(rel, lines, manifest row)]

    def want_(self, name):
        """Whether a showcase session still asks for `name`; the request is consumed."""
        if name in self.want:
            self.want.discard(name)
            return True
        return False

    # -- low level -------------------------------------------------------------------------
    def tick(self, lo, hi):
        self.t += lo + int(self.rng.random() * (hi - lo + 1))

    def new_id(self):
        while True:
            i = "%08x" % self.rng.getrandbits(32)
            if i not in self.ids:
                self.ids.add(i)
                return i

    def _append_line(self, b):
        """Appends one line: UTF-8 bytes with its newline."""
        self.lines.append(b)
        self.size += len(b)

    def write_header(self, session_id, version, parent_session=None, v1_extra=None):
        self.session_id = session_id
        self.parent_session = parent_session
        h = {"type": "session"}
        if version is not None:
            h["version"] = version
        h["id"] = session_id
        h["timestamp"] = iso(self.t)
        h["cwd"] = self.cwd
        if v1_extra:
            h.update(v1_extra)
        if parent_session is not None:
            h["parentSession"] = parent_session
        self.header = h
        self._append_line(dumpb(h, nl=True))
        self.v1_index = 1

    def add(self, etype, fields, *, usage=None, kind="other", tokens=0, parent=Ellipsis, custom_order=False, ts=None, eid=None,
            calls=None):
        """Append an entry as child of the leaf (or `parent`), make it the leaf. A `usage` is a new
        billed call, unless `calls` says which calls the line stands for (a subagent aggregate)."""
        tms = self.t if ts is None else ts
        ts = iso(tms)
        if self.era == "v1":
            d = {"type": etype, "timestamp": ts}
            d.update(fields)
            self._append_line(dumpb(d, usage, nl=True))
            if usage is not None:
                self.register_call(etype, fields, ts, usage)
            idx = self.v1_index
            self.v1_index += 1
            self.ctx += tokens
            if kind == "user":
                self.v1_users.append(idx)
            return idx
        if eid is None:
            eid = self.new_id()
        par = self.leaf if parent is Ellipsis else parent
        omit = self.omit_parent_once
        self.omit_parent_once = False
        if custom_order:
            d = {"type": etype}
            d.update(fields)
            d["id"] = eid
            if not omit:
                d["parentId"] = par
            d["timestamp"] = ts
        else:
            d = {"type": etype, "id": eid}
            if not omit:
                d["parentId"] = par
            d["timestamp"] = ts
            d.update(fields)
        self._append_line(dumpb(d, usage, nl=True))
        if calls is not None:
            if calls:
                self.line_calls[len(self.lines) - 1] = tuple(calls)
        elif usage is not None:
            self.register_call(etype, fields, ts, usage)
        if self.msg_log is not None and etype == "message":
            self.msg_log.append((len(self.lines) - 1, fields["message"], usage, tms))
        self.meta[eid] = [None if omit else par, kind, tokens, len(self.lines) - 1]
        self.order.append(eid)
        if par is not None and par != self.leaf:
            # branching: the active path becomes root..par
            self.set_path_to(par)
        elif par is None and self.path:
            self.path, self.pidx = [], {}
        self.leaf = eid
        self.pidx[eid] = len(self.path)
        self.path.append(eid)
        if kind == "compaction":
            self.ctx = tokens
        else:
            self.ctx += tokens
        return eid

    def register_call(self, etype, fields, ts, usage):
        """A new billed call on the line just appended: its id, and what identifies it to a reader
        (the message's timestamp, provider and model, or the entry's timestamp) with its figures."""
        m = _USAGE_HEAD.match(usage)
        i = usage.index('"total":', m.end()) + 8
        j = i
        while usage[j] not in ",}":
            j += 1
        nums = (int(m[1]), int(m[2]), int(m[3]), int(m[4]), float(usage[i:j]))
        if etype == "message":
            m = fields["message"]
            key = ("message", m.get("timestamp"), m.get("provider"), m.get("model"))
        else:
            key = (etype, ts, fields.get("provider"), fields.get("model"))
        cid = "%s%d" % (self.cid_prefix, self.ncalls)
        self.ncalls += 1
        self.calls[cid] = key + nums
        self.line_calls[len(self.lines) - 1] = (cid,)
        return cid

    def copy_line(self, src, li):
        """Appends line `li` of session `src` verbatim, with the calls it carries."""
        self._append_line(src.lines[li])
        cids = src.line_calls.get(li)
        if cids:
            self.line_calls[len(self.lines) - 1] = cids
            for c in cids:
                self.calls[c] = src.calls[c]

    def set_path_to(self, eid):
        chain = []
        cur = eid
        while cur is not None:
            chain.append(cur)
            cur = self.meta[cur][0]
        chain.reverse()
        self.path = chain
        self.pidx = {e: i for i, e in enumerate(chain)}
        # recompute the context estimate from the latest compaction on the path
        start = 0
        for i in range(len(chain) - 1, -1, -1):
            if self.meta[chain[i]][1] == "compaction":
                start = i
                break
        self.ctx = sum(self.meta[e][2] for e in chain[start:])

    # -- sizes -------------------------------------------------------------------------------
    def n(self, key, mult=1.0):
        med, sigma, cap = self.P.sz[key]
        v = self.rng.lognormvariate(math.log(med * mult), sigma)
        return int(max(8, min(cap * max(1.0, mult), v)))

    # -- content builders --------------------------------------------------------------------
    def image_block(self):
        rng = self.rng
        n = self.n("image", min(self.mult, 2.0))
        if rng.random() < 0.6:
            data, mime = txt_cat("iVBORw0KGgoAAAANSUhEUgAA", self.pools.b64_t(rng, n)), "image/png"
        else:
            data, mime = txt_cat("/9j/4AAQSkZJRgABAQAAAQABAAD/", self.pools.b64_t(rng, n)), "image/jpeg"
        self.features["image"] += 1
        return {"type": "image", "data": data, "mimeType": mime}, data.n

    def user_text(self):
        rng = self.rng
        n = self.n("user")
        if rng.random() < self.P.paste:
            n += self.n("bash", self.mult)  # pasted log
            return txt_cat(self.pools.text_t(rng, n // 3), "\n\n```\n", self.pools.log_t(rng, n), "```\n", self.pools.text_t(rng, 60))
        if rng.random() < 0.02:
            return txt_cat("@" + rng.choice(FILES) + ".ts ", self.pools.text_t(rng, n))
        return self.pools.text_t(rng, n)

    def tool_path(self):
        rng = self.rng
        r = rng.random()
        f = rng.choice(FILES)
        if r < 0.05:
            return self.cwd.replace("\\", "/") + "/docs/説明-" + f + ".md"
        if r < 0.5:
            return "src/" + f + rng.choice((".ts", ".rs", ".py", ".md"))
        return self.cwd + "/" + "packages/" + rng.choice(NOUNS) + "/src/" + f + ".ts"

    def tool_call_id(self, n):
        rng, a = self.rng, self.model.style if self.model else "anthropic"
        if a == "anthropic":
            return "toolu_01" + self.pools.alnum_text(rng, 22)
        if a == "openai":
            return "call_" + self.pools.alnum_text(rng, 24) + "|fc_" + "%048x" % rng.getrandbits(192)
        if a == "google":
            return "%s_%d_%d" % (n, self.t, rng.randint(0, 9))
        return "call_" + self.pools.alnum_text(rng, 24)

    def make_tool_call(self, tools):
        rng = self.rng
        names = [t for t in tools if t in TOOL_WEIGHTS] or ["read", "bash"]
        name = weighted(rng, [(TOOL_WEIGHTS[t], t) for t in names])
        if "tool_result_usage" in self.want and self.era in ("v3", "v3legacy"):
            name = "web_search"
        if name == "read":
            args = {"path": self.tool_path()}
            if rng.random() < 0.2:
                args["offset"] = rng.randint(1, 2000)
                args["limit"] = rng.choice((50, 100, 200, 400))
        elif name == "bash":
            args = {"command": rng.choice(("cargo test", "npm run check", "git status", "git diff --stat", "ls -la",
                                           "rg -n 'parentId' src/", "cargo build --release 2>&1 | tail -50",
                                           "python3 -c \"print('héllo 世界')\"", "find . -name '*.jsonl' | head")) }
            if rng.random() < 0.3:
                args["timeout"] = rng.choice((30, 60, 120, 600))
        elif name == "edit":
            edits = []
            for _ in range(1 if rng.random() < 0.7 else rng.randint(2, 4)):
                edits.append({"oldText": self.pools.code_t(rng, self.n("text")),
                              "newText": self.pools.code_t(rng, self.n("text"))})
            args = {"path": self.tool_path(), "edits": edits}
        elif name == "write":
            args = {"path": self.tool_path(), "content": self.pools.code_t(rng, self.n("read", self.mult))}
        elif name == "grep":
            args = {"pattern": rng.choice(("parentId", "fn \\w+\\(", "TODO|FIXME", "firstKeptEntryId", "séance")),
                    "path": "src", "ignoreCase": rng.random() < 0.3}
            if rng.random() < 0.4:
                args["glob"] = "*.rs"
        elif name == "find":
            args = {"pattern": "**/*." + rng.choice(("ts", "rs", "jsonl", "md")), "path": "."}
        elif name == "ls":
            args = {"path": rng.choice((".", "src", "packages/coding-agent", "データ"))}
        elif name == "web_search":
            args = {"query": rng.choice(("rust simd json parser", "polars lazy frame group by", "JSON.stringify key order",
                                         "ユニコード 正規化", "commander vs clap")),
                    "options": {"maxResults": rng.randint(3, 10), "recency": rng.choice(("day", "week", "any"))}}
        elif name == "subagent":
            args = {"task": self.pools.text(rng, self.n("user")), "model": "claude-haiku-4-5",
                    "tools": rng.sample(["read", "grep", "find", "bash"], 2)}
        else:
            args = {"action": rng.choice(("add", "done", "list")), "text": self.pools.text(rng, 40)}
        self.features["tool_call"] += 1
        return {"type": "toolCall", "id": self.tool_call_id(name), "name": name, "arguments": args}

    def tool_result_content(self, name, args):
        """Returns (content blocks, details or None, isError, chars)."""
        rng = self.rng
        err = rng.random() < 0.05 or self.want_("tool_result_error")
        if err:
            txt = rng.choice(("ENOENT: no such file or directory, open '%s'" % args.get("path", "x"),
                              "Command exited with code 1\n" + self.pools.log_text(rng, 300),
                              "Could not find the exact text in the file. The old text must match exactly."))
            return [{"type": "text", "text": txt}], None, True, len(txt)
        details = None
        if name == "read":
            if rng.random() < 0.04:
                img, n = self.image_block()
                return [{"type": "text", "text": "Read image file [%s]" % img["mimeType"]}, img], None, False, 4800
            txt = self.pools.code_t(rng, self.n("read", self.mult))
            if rng.random() < 0.05:
                details = {"truncation": {"truncated": True, "truncatedBy": "bytes", "totalLines": rng.randint(2000, 9000),
                                          "outputLines": 2000, "content": txt.head(200)}}
        elif name == "bash":
            txt = self.pools.log_t(rng, self.n("bash", self.mult))
            if rng.random() < 0.05:
                details = {"truncation": {"truncated": True, "truncatedBy": "lines"},
                           "fullOutputPath": "/tmp/pi-bash-%08x.log" % rng.getrandbits(32)}
        elif name == "edit":
            txt = "Successfully replaced %d block(s) in %s." % (len(args.get("edits", [1])), args.get("path"))
            details = {"diff": self.pools.code_t(rng, self.n("text")), "firstChangedLine": rng.randint(1, 900)}
        elif name == "write":
            txt = "Successfully wrote %d bytes to %s" % (tlen(args.get("content", "")), args.get("path"))
        elif name in ("grep", "find", "ls"):
            txt = self.pools.log_t(rng, self.n("bash"))
        elif name in ("web_search", "subagent"):
            txt = self.pools.text_t(rng, self.n("final"))
        else:
            txt = "Todo list updated: " + self.pools.text(rng, 80)
        return [{"type": "text", "text": txt}], details, False, tlen(txt)

    def thinking_block(self):
        rng = self.rng
        m = self.model
        th = self.pools.text_t(rng, self.n("think"))
        if m.style == "anthropic":
            if rng.random() < 0.03 or self.want_("thinking_redacted"):
                self.features["thinking_redacted"] += 1
                return {"type": "thinking", "thinking": "", "thinkingSignature": self.pools.b64_t(rng, 800), "redacted": True}, 200
            return {"type": "thinking", "thinking": th, "thinkingSignature": self.pools.b64_t(rng, rng.randint(100, 1200))}, th.n
        if m.style == "openai":
            sig = dumps({"id": "rs_" + "%048x" % rng.getrandbits(192), "type": "reasoning",
                         "summary": [{"type": "summary_text", "text": th.head(300)}],
                         "encrypted_content": self.pools.b64_text(rng, rng.randint(200, 2000))})
            return {"type": "thinking", "thinking": th, "thinkingSignature": sig}, th.n
        return {"type": "thinking", "thinking": th}, th.n

    # -- usage -------------------------------------------------------------------------------
    def call_usage(self, model, out_tokens, think_tokens, *, style=None):
        rng = self.rng
        prompt = max(200, min(int(self.ctx), int(model.eff * 0.97)))
        st = style or model.style
        cw1h = reasoning = None
        total_override = None
        if self.era == "v1":
            cached = min(self.cached, prompt)
            inp = rng.randint(1, 12) if cached else rng.randint(3, 4000)
            cw = max(0, prompt - cached - inp)
            u = usage_json(model, inp, out_tokens + think_tokens, cached, cw,
                           style="legacy" if rng.random() < 0.5 else "anthropic", era="v1")
            self.cached = prompt
            return u, (inp, out_tokens + think_tokens, cached, cw)
        out = out_tokens + think_tokens
        if st == "anthropic":
            cached = min(self.cached, prompt)
            inp = rng.randint(1, 12) if cached else rng.randint(3, 2000)
            cw = max(0, prompt - cached - inp)
            cr = cached
            if self.era == "v3":
                if self.long_cache:
                    cw1h = cw if rng.random() < 0.8 else cw // 2
                if think_tokens and rng.random() < 0.5:
                    reasoning = think_tokens
        elif st in ("openai", "completions"):
            cr = (min(self.cached, prompt) // 1024) * 1024 if self.cached > 1024 else 0
            inp = prompt - cr
            cw = 0
            reasoning = think_tokens
            if model.provider == "openrouter" and (rng.random() < 0.5 or "cost_total_from_provider" in self.want):
                c = calc_cost(model, inp, out, cr, cw, None)[4]
                total_override = round(c * rng.uniform(0.9, 1.15), 9)
                if total_override == int(total_override):
                    total_override = None
                else:
                    self.features["cost_total_from_provider"] += 1
                    self.want.discard("cost_total_from_provider")
        else:  # google
            cr = (prompt // 2) if (self.cached and rng.random() < 0.5) else 0
            inp = prompt - cr
            cw = 0
            reasoning = think_tokens
        if cw1h is not None:
            self.features["cacheWrite1h"] += 1
        u = usage_json(model, inp, out, cr, cw, cw1h=cw1h, reasoning=reasoning, style=st, era="v3",
                       total_override=total_override)
        self.cached = prompt
        return u, (inp, out, cr, cw)

    def side_usage(self, model, prompt, out):
        """Usage of a summary call (compaction, branch_summary) or nested tool work."""
        rng = self.rng
        prompt = max(100, min(prompt, model.eff))
        if model.style == "anthropic":
            return usage_json(model, prompt, out, 0, 0, era=self.era if self.era != "v3legacy" else "v3")
        cr = rng.randint(0, prompt // 2) // 1024 * 1024
        return usage_json(model, prompt - cr, out, cr, 0, reasoning=0, era="v3")

    # -- system messages ----------------------------------------------------------------------
    def initial_system(self):
        rng = self.rng
        P = self.P
        sections = {"preamble": "You are an expert coding assistant operating inside pi, a coding agent harness. " + self.pools.text(rng, self.n("section")),
                    "tools": "", "guidelines": self.pools.text(rng, self.n("section")), "cwd": "Current working directory: " + self.cwd}
        tools = CORE_TOOLS + [t for t in EXTRA_TOOLS if rng.random() < (0.5 if P.small else 0.35)]
        sections["tools"] = "<tools>\n" + "\n".join("- %s: %s" % (t, TOOLS[t]["description"][:60]) for t in tools) + "\n</tools>"
        if rng.random() < 0.5:
            sections["agents_md"] = "# AGENTS.md\n\n" + self.pools.text(rng, self.n("section") * (1 if P.small else 3))
        if rng.random() < 0.3:
            sections["skills"] = "<skills>\n" + self.pools.text(rng, self.n("section")) + "\n</skills>"
        sections["date"] = "Current date: " + iso(self.t)[:10]
        decls = [TOOLS[t] for t in tools]
        self.sys_sections = dict(sections)
        self.sys_tools = {d["name"]: d for d in decls}
        self.has_system = True
        msg = {"role": "system", "content": "", "sections": sections, "toolsAdded": decls, "timestamp": self.t}
        tok = (sum(len(v) for v in sections.values()) + len(dumps(decls))) // 4
        self.features["system_initial"] += 1
        self.add("message", {"message": msg}, kind="system", tokens=tok)

    def system_patch(self):
        rng = self.rng
        msg = {"role": "system", "content": ""}
        sections = {}
        r = rng.random()
        if self.sys_sections and self.want_("system_section_removed"):
            r = 0.5
        if r < 0.4 or not self.sys_sections:
            name = rng.choice(("skills", "agents_md", "plan_mode", "memory", "extension:lint"))
            sections[name] = self.pools.text(rng, self.n("section"))
        elif r < 0.7:
            name = rng.choice(list(self.sys_sections))
            sections[name] = None
            self.features["system_section_removed"] += 1
        else:
            name = rng.choice(list(self.sys_sections))
            sections[name] = self.pools.text(rng, self.n("section"))
        if rng.random() < 0.2:
            msg["content"] = "Additional instructions: " + self.pools.text(rng, 120)
            self.sys_content.append(msg["content"])
        msg["sections"] = sections
        for k, v in sections.items():
            if v is None:
                self.sys_sections.pop(k, None)
            else:
                self.sys_sections[k] = v
        r = rng.random()
        if r < 0.35:
            cand = [t for t in EXTRA_TOOLS if t not in self.sys_tools]
            if cand:
                t = rng.choice(cand)
                msg["toolsAdded"] = [TOOLS[t]]
                self.sys_tools[t] = TOOLS[t]
        elif r < 0.6:
            cand = [t for t in self.sys_tools if t not in ("read", "bash")]
            if cand:
                t = rng.choice(cand)
                msg["toolsRemoved"] = [{"name": t}]
                del self.sys_tools[t]
        msg["timestamp"] = self.t
        self.features["system_patch"] += 1
        self.add("message", {"message": msg}, kind="system", tokens=len(dumps(msg)) // 4)

    def current_system_message(self, ts):
        m = {"role": "system", "content": "\n\n".join(self.sys_content)}
        if self.sys_sections:
            m["sections"] = dict(self.sys_sections)
        if self.sys_tools:
            m["toolsAdded"] = list(self.sys_tools.values())
        m["timestamp"] = ts
        return m

    # -- turns -------------------------------------------------------------------------------
    def user_message(self):
        rng = self.rng
        txt = self.user_text()
        tok = txt.n // 4
        if self.era in ("v1", "v2") or (rng.random() < 0.7 and not self.want_("user_content_string")):
            content = [{"type": "text", "text": txt}]
            if self.era != "v1" and (rng.random() < self.P.ev["user_image"] or self.want_("user_image")):
                for _ in range(1 if rng.random() < 0.8 else 2):
                    img, _n = self.image_block()
                    content.append(img)
                    tok += 1200
                self.features["user_image"] += 1
        else:
            content = txt
            self.features["user_content_string"] += 1
        self.tick(5_000, 600_000 if not self.P.small else 60_000)
        if rng.random() < 0.01 or self.want_("long_gap"):
            self.tick(3_600_000, 3 * 86_400_000)  # came back hours/days later
            self.features["long_gap"] += 1
        mts = self.t
        self.tick(1, 40)
        return self.add("message", {"message": {"role": "user", "content": content, "timestamp": mts}}, kind="user", tokens=tok)

    def assistant_message(self, final, tools):
        rng = self.rng
        P = self.P
        m = self.model
        blocks = []
        think_chars = 0
        out_chars = 0
        if self.thinking != "off" and m.reasoning and (rng.random() < P.think or "thinking_redacted" in self.want):
            b, c = self.thinking_block()
            blocks.append(b)
            think_chars += c
            self.features["thinking"] += 1
        if final or rng.random() < 0.5:
            t = self.pools.text_t(rng, self.n("final" if final else "text"))
            b = {"type": "text", "text": t}
            if m.style == "openai" and rng.random() < 0.5:
                b["textSignature"] = dumps({"v": 1, "id": "msg_" + "%048x" % rng.getrandbits(192), "phase": "final_answer" if final else "commentary"})
            blocks.append(b)
            out_chars += t.n
        calls = []
        if not final:
            for _ in range(1 + (rng.random() < P.call2) + (rng.random() < P.call3)):
                c = self.make_tool_call(tools)
                calls.append(c)
                blocks.append(c)
                out_chars += len(c["name"]) + jlen(c["arguments"])
        stop = "toolUse" if calls else "stop"
        r = rng.random()
        if self.want_("stop_aborted"):
            r = 0.0
        elif self.want_("stop_error"):
            r = P.abort
        elif final and self.want_("stop_length"):
            r = P.abort + P.error
        error_message = None
        mts = self.t
        self.tick(800, 90_000)
        if self.era == "v1":
            mts = self.t - rng.randint(500, 60_000)
        if r < P.abort:
            stop = "aborted"
            blocks = [b for b in blocks if b["type"] != "toolCall"][:1]
            calls = []
            error_message = "Request was aborted." if rng.random() < 0.7 else "Operation aborted"
            if rng.random() < 0.5:
                usage = ZERO_USAGE_V1 if self.era == "v1" else ZERO_USAGE_V3
                self.features["zero_usage"] += 1
            else:
                usage, _ = self.call_usage(m, max(1, out_chars // 8), think_chars // 8)
            self.features["stop_aborted"] += 1
        elif r < P.abort + P.error:
            stop = "error"
            blocks, calls = [], []
            error_message = rng.choice(ERROR_MESSAGES)
            usage = ZERO_USAGE_V1 if self.era == "v1" else ZERO_USAGE_V3
            self.features["zero_usage"] += 1
            self.features["stop_error"] += 1
        else:
            if final and r < P.abort + P.error + P.length:
                stop = "length"
                self.features["stop_length"] += 1
            usage, _ = self.call_usage(m, out_chars // 4 + 1, (think_chars + 3) // 4)
        msg = {"role": "assistant", "content": blocks, "api": m.api, "provider": m.provider, "model": m.id,
               "usage": USAGE_PH, "stopReason": stop, "timestamp": mts}
        if self.era == "v3":
            if m.style == "anthropic" and rng.random() < 0.7:
                msg["responseId"] = "msg_01" + self.pools.alnum_text(rng, 22)
            elif m.style == "openai":
                msg["responseId"] = "resp_" + "%048x" % rng.getrandbits(192)
            if m.id == "openrouter/auto" and stop not in ("error",):
                msg["responseModel"] = rng.choice(OPENROUTER_AUTO_TARGETS)
                self.features["responseModel"] += 1
            elif m.id in ANTHROPIC_FALLBACKS and rng.random() < 0.02:
                msg["responseModel"] = ANTHROPIC_FALLBACKS[m.id]
                self.features["responseModel"] += 1
            elif rng.random() < 0.01 or self.want_("responseModel_same"):
                msg["responseModel"] = m.id  # provider reported the requested model
                self.features["responseModel_same"] += 1
            elif self.virtual and self.want_("responseModel_virtual"):
                msg["responseModel"] = ANTHROPIC_FALLBACKS.get(m.id, m.id)
                self.features["responseModel"] += 1
            if self.virtual and "responseModel" in msg:
                self.features["responseModel_virtual"] += 1
            msg["thinkingLevel"] = self.thinking
        if error_message:
            msg["errorMessage"] = error_message
        self.features["assistant"] += 1
        self.features["provider_" + m.provider] += 1
        tok = (out_chars + think_chars) // 4
        self.add("message", {"message": msg}, usage=usage, kind="assistant", tokens=tok)
        return calls, stop

    def tool_results(self, calls):
        rng = self.rng
        for c in calls:
            content, details, is_err, chars = self.tool_result_content(c["name"], c["arguments"])
            mts = self.t
            self.tick(30, 30_000 if c["name"] in ("bash", "subagent", "web_search") else 400)
            msg = {"role": "toolResult", "toolCallId": c["id"], "toolName": c["name"], "content": content}
            if details is not None:
                msg["details"] = details
            usage = None
            if self.era in ("v3", "v3legacy") and c["name"] in TOOL_USAGE_TOOLS and not is_err and (rng.random() < self.P.tool_usage or self.want_("tool_result_usage")):
                sub = MODEL_BY_KEY[("anthropic", "claude-haiku-4-5")] if rng.random() < 0.6 else MODEL_BY_KEY[("openai", "gpt-5-mini")]
                msg["usage"] = USAGE_PH
                usage = self.side_usage(sub, rng.randint(2000, 60000), rng.randint(100, 3000))
                self.features["tool_result_usage"] += 1
                if rng.random() < 0.2:
                    msg["nestedCalls"] = {"calls": [{"id": "n%d" % i, "name": rng.choice(("read", "grep")), "status": "ok",
                                                     "durationMs": rng.randint(3, 900)} for i in range(rng.randint(1, 3))],
                                          "complete": True}
            msg["isError"] = is_err
            if self.era == "v3" and rng.random() < 0.5:
                msg["durationMs"] = rng.randint(2, 20000)
            msg["timestamp"] = mts
            self.features["tool_result"] += 1
            if is_err:
                self.features["tool_result_error"] += 1
            self.add("message", {"message": msg}, usage=usage, kind="toolResult", tokens=chars // 4)

    def agent_turn(self):
        rng = self.rng
        tools = list(self.sys_tools) if self.sys_tools else CORE_TOOLS + ["grep"]
        steps = max(1, min(40, int(rng.expovariate(1 / self.P.steps_mean)) + 1))
        for i in range(steps):
            final = i == steps - 1
            calls, stop = self.assistant_message(final, tools)
            if stop in ("aborted", "error"):
                if stop == "error" and (rng.random() < 0.6 or self.want_("retry_after_error")):
                    self.tick(1000, 20_000)
                    self.assistant_message(True, tools)  # retry succeeded
                    self.features["retry_after_error"] += 1
                return
            if calls:
                self.tool_results(calls)

    # -- side events ---------------------------------------------------------------------------
    def model_change(self, virtual=False):
        rng = self.rng
        self.tick(500, 20_000)
        if virtual:
            prov, mid = rng.choice(VIRTUAL_MODELS)
            self.virtual = (prov, mid)
            self.add("model_change", {"provider": prov, "modelId": mid})
            self.features["model_change_virtual"] += 1
            if self.era == "v3" and rng.random() < 0.7:
                self.add("custom", {"customType": "pi.virtual-model-state",
                                    "data": {"provider": prov, "modelId": mid, "state": {"route": rng.choice(("fast", "deep")), "turns": rng.randint(0, 40)}}},
                         custom_order=True)
                self.features["custom"] += 1
            # the router dispatches to a physical model
            self.model = weighted(rng, MODELS[:9])
            return
        self.virtual = None
        self.model = weighted(rng, MODELS)
        self.cached = 0
        self.add("model_change", {"provider": self.model.provider, "modelId": self.model.id})
        self.features["model_change"] += 1

    def thinking_change(self):
        self.tick(500, 20_000)
        self.thinking = self.rng.choice(THINKING_LEVELS)
        self.add("thinking_level_change", {"thinkingLevel": self.thinking})
        self.features["thinking_level_change"] += 1

    def usage_entry(self, unknown=False, tiny=False):
        rng = self.rng
        self.tick(1000, 300_000)
        if unknown:
            kind = rng.choice(("title_generation", "embedding", "x-rerank", "classifier", "speech"))
            m = weighted(rng, MODELS[:10])
            f = {"kind": kind, "provider": m.provider, "model": m.id, "usage": USAGE_PH}
            if tiny or rng.random() < 0.2:
                # a few tokens on a cheap model: costs below 1e-6 print as 7.5e-7 in JavaScript
                m = MODEL_BY_KEY[("openai", "gpt-5-mini")]
                f["provider"], f["model"] = m.provider, m.id
                u = usage_json(m, rng.randint(1, 3), 0, rng.randint(0, 4), 0, reasoning=0, era="v3")
                self.features["usage_tiny_cost"] += 1
            else:
                u = self.side_usage(m, rng.randint(50, 4000), rng.randint(1, 200))
            if rng.random() < 0.5:
                f["note"] = rng.choice(("session title", "semantic index of 42 files", "routing décision"))
            self.features["usage_unknown_kind"] += 1
        else:
            m = self.model if self.model.style == "anthropic" else MODEL_BY_KEY[("anthropic", "claude-sonnet-4-5")]
            prompt = max(1000, min(int(self.ctx), m.eff))
            u = usage_json(m, 0, rng.choice((0, 1)), prompt, 0 if rng.random() < 0.8 else rng.randint(10, 500), era="v3")
            f = {"kind": "cache_warm", "provider": m.provider, "model": m.id, "usage": USAGE_PH}
            self.features["usage_cache_warm"] += 1
        self.add("usage", f, usage=u)

    def custom_entry(self):
        rng = self.rng
        self.tick(10, 5000)
        r = rng.random()
        if r < 0.4:
            ct, data = "todo", {"items": [{"text": self.pools.text(rng, 40), "done": rng.random() < 0.5} for _ in range(rng.randint(1, 6))]}
        elif r < 0.7:
            ct, data = "git-checkpoint", {"commit": "%040x" % rng.getrandbits(160), "files": [self.tool_path() for _ in range(rng.randint(1, 4))], "dirty": rng.random() < 0.3}
        elif r < 0.9:
            ct, data = "plan-mode", {"enabled": rng.random() < 0.5, "plan": self.pools.text(rng, self.n("custom"))}
        else:
            ct, data = "ext:metrics", {"latencyMs": rng.randint(10, 9000), "ratio": round(rng.uniform(0.01, 0.99), 3), "tags": ["ü", "测试"]}
        self.add("custom", {"customType": ct, "data": data}, custom_order=True)
        self.features["custom"] += 1

    def custom_message(self):
        rng = self.rng
        self.tick(10, 5000)
        txt = self.pools.text(rng, self.n("custom"))
        ct = rng.choice(("pi.skill", "reminder", "lint-report", "memory"))
        display = rng.random() < 0.6
        if self.era == "v2":
            msg = {"role": "hookMessage", "customType": ct, "content": txt if rng.random() < 0.5 else [{"type": "text", "text": txt}],
                   "display": display, "timestamp": self.t}
            if rng.random() < 0.3:
                msg["details"] = {"source": "hook"}
            self.features["hookMessage"] += 1
            return self.add("message", {"message": msg}, kind="custom_message", tokens=len(txt) // 4)
        content = txt if rng.random() < 0.5 else [{"type": "text", "text": txt}]
        f = {"customType": ct, "content": content, "display": display}
        if rng.random() < 0.3:
            f["details"] = {"severity": rng.choice(("info", "warn")), "count": rng.randint(1, 20)}
        self.features["custom_message"] += 1
        return self.add("custom_message", f, kind="custom_message", tokens=len(txt) // 4, custom_order=True)

    def label(self, on_path=False):
        rng = self.rng
        if not self.order:
            return
        if on_path and self.path:
            target, clear = rng.choice([e for e in self.path[-50:] if self.meta[e][1] != "label"] or self.path[-1:]), False
        elif self.labels and (rng.random() < 0.15 or self.want_("label_cleared")):
            target, clear = rng.choice(sorted(self.labels)), True
        else:
            target = rng.choice(self.order[-50:])
            clear = not (rng.random() < 0.85 or target not in self.labels)
        self.tick(100, 60_000)
        f = {"targetId": target}
        if not clear:
            f["label"] = rng.choice(("checkpoint", "good state", "before refactor", "✅ tests pass", "分岐点"))
            self.labels[target] = (f["label"], iso(self.t))
        else:
            self.labels.pop(target, None)
            self.features["label_cleared"] += 1
        self.add("label", f, kind="label")
        self.features["label"] += 1

    def session_info(self):
        rng = self.rng
        self.tick(100, 60_000)
        r = rng.random()
        if r < 0.1 or self.want_("session_info_cleared"):
            name = ""
            self.features["session_info_cleared"] += 1
        else:
            name = rng.choice(("Refactor auth module", "Fix parser bug", "pisa: usage frame", "Straße-App Migration",
                               "デバッグ作業", "perf 🚀", "Review PR #1234")) + ("" if r < 0.6 else " " + self.pools.text(rng, 20))
            name = re.sub(r"[\r\n]+", " ", name).strip()
        self.add("session_info", {"name": name})
        self.features["session_info"] += 1

    def bash_execution(self):
        rng = self.rng
        self.tick(1000, 120_000)
        out = self.pools.log_t(rng, self.n("bash", self.mult))
        cancelled = rng.random() < 0.1
        msg = {"role": "bashExecution", "command": rng.choice(("ls", "git status", "cargo test 2>&1 | tail", "npm test", "echo 'héllo'"))}
        msg["output"] = out
        if not cancelled:
            msg["exitCode"] = rng.choice((0, 0, 0, 1, 2, 127))
        msg["cancelled"] = cancelled
        msg["truncated"] = rng.random() < 0.1
        if msg["truncated"]:
            msg["fullOutputPath"] = "/tmp/pi-bash-%08x.log" % rng.getrandbits(32)
        if self.era == "v3" and (rng.random() < 0.2 or self.want_("bash_exclude_from_context")):
            msg["excludeFromContext"] = True
            self.features["bash_exclude_from_context"] += 1
        msg["timestamp"] = self.t
        self.features["bashExecution"] += 1
        self.add("message", {"message": msg}, kind="bash", tokens=out.n // 4)

    def compacted_targets(self):
        """Path entries before the kept range of the latest compaction on the path, and that compaction."""
        c = None
        for i in range(len(self.path) - 1, -1, -1):
            if self.meta[self.path[i]][1] == "compaction":
                c = i
                break
        if c is None:
            return [], None
        fk = self.comp_first_kept.get(self.path[c])
        end = self.pidx[fk] if fk in self.pidx and self.pidx[fk] < c else c
        return [e for e in self.path[max(0, end - 400):end] if self.meta[e][1] in CONTEXT_KINDS], self.path[c]

    def context_edit(self, mode=None):
        """A context_edit entry. mode: path (a target on the active path), off_path (a target on an
        abandoned branch), compacted (a target before the latest compaction's kept range) or
        compaction (the latest compaction itself)."""
        rng = self.rng
        P = self.P
        if mode is None:
            r = rng.random()
            mode = "off_path" if r < P.ce_off_path else "compacted" if r < P.ce_off_path + P.ce_compacted else "path"
            if mode == "compacted" and rng.random() < 0.15:
                mode = "compaction"
        if mode == "path":
            for w, m in (("context_edit_off_path", "off_path"), ("context_edit_compacted_target", "compacted"),
                         ("context_edit_target_compaction", "compaction")):
                if w in self.want:
                    mode = m
                    break
        target = None
        if mode == "off_path":
            cands = [e for e in self.order[-400:] if e not in self.pidx and self.meta[e][1] in CONTEXT_KINDS]
            if cands:
                target = rng.choice(cands)
                self.features["context_edit_off_path"] += 1
                self.want.discard("context_edit_off_path")
        elif mode in ("compacted", "compaction"):
            cands, comp = self.compacted_targets()
            if mode == "compaction" and comp is not None:
                target = comp
            elif cands:
                target = rng.choice(cands)
                self.features["context_edit_compacted_target"] += 1
                self.want.discard("context_edit_compacted_target")
        if target is None:
            cands = [e for e in self.path[-400:] if self.meta[e][1] in CONTEXT_KINDS]
            if not cands:
                return None
            if self._last_edit_target in self.pidx and (rng.random() < 0.2 or self.want_("context_edit_same_target")):
                target = self._last_edit_target
                self.features["context_edit_same_target"] += 1
            else:
                target = rng.choice(cands)
                for k in CONTEXT_KINDS:
                    if "context_edit_target_" + k in self.want:
                        sub = [e for e in cands if self.meta[e][1] == k]
                        if sub:
                            target = rng.choice(sub)
                            break
        self._last_edit_target = target
        kind = self.meta[target][1]
        r = rng.random()
        plain = False
        if self.want_("context_edit_null"):
            r = 0.0
        elif "context_edit_string" in self.want:
            r, plain = 0.5, self.want_("context_edit_string")
        elif "context_edit_string_normalized" in self.want and kind in ("assistant", "toolResult"):
            r = 0.5
        elif self.want_("context_edit_array"):
            r = 0.9
        self.tick(100, 30_000)
        if r < 0.35:
            rep = None
            self.features["context_edit_null"] += 1
        elif r < 0.7:
            txt = "[edited] " + self.pools.text(rng, self.n("text"))
            if kind in ("assistant", "toolResult") and rng.random() < 0.9 and not plain:
                rep = {"content": [{"type": "text", "text": txt}]}  # what appendContextEdit writes
                self.features["context_edit_string_normalized"] += 1
                self.want.discard("context_edit_string_normalized")
            else:
                rep = {"content": txt}
                self.features["context_edit_string"] += 1
        else:
            blocks = [{"type": "text", "text": self.pools.text(rng, self.n("text"))}]
            if kind == "user" and rng.random() < 0.2:
                img, _n = self.image_block()
                blocks.append(img)
            rep = {"content": blocks}
            self.features["context_edit_array"] += 1
        self.features["context_edit"] += 1
        self.features["context_edit_target_" + kind] += 1
        self.want.discard("context_edit_target_" + kind)
        return self.add("context_edit", {"targetId": target, "replacement": rep}, kind="context_edit")

    def context_edit_abandoned(self):
        """A context edit that a branch then leaves behind: the edit itself is off the active path."""
        rng = self.rng
        eid = self.context_edit()
        if eid is None or self.era == "v1":
            return
        i = self.pidx[eid]
        lo = max([1, i - 80] + [j + 1 for j in range(i) if self.meta[self.path[j]][1] == "compaction"])
        cands = [j for j in range(lo, i) if self.meta[self.path[j]][1] in ("assistant", "toolResult")]
        if not cands:
            return
        self.branch(point=self.path[rng.choice(cands)])
        self.features["context_edit_abandoned"] += 1

    def branch(self, summary=None, point=None):
        """Move the leaf back to an earlier entry (abandoning billed work), maybe with a summary."""
        rng = self.rng
        if point is None:
            if len(self.path) < 6:
                return
            lo = max(1, len(self.path) - 120)
            cands = [i for i in range(lo, len(self.path) - 2) if self.meta[self.path[i]][1] in ("user", "assistant", "toolResult")]
            if not cands:
                return
            point = self.path[rng.choice(cands)]
        if self.meta[point][1] == "user":  # re-edit a user message: continue from its parent
            point = self.meta[point][0]
            if point is None:
                return
        old_leaf = self.leaf
        self.tick(2000, 120_000)
        self.features["branch"] += 1
        if (rng.random() < 0.5) if summary is None else summary:
            summ = self.pools.text(rng, self.n("summary"))
            f = {"fromId": old_leaf, "summary": summ,
                 "details": {"readFiles": [self.tool_path() for _ in range(rng.randint(0, 3))], "modifiedFiles": [self.tool_path()]}}
            u = None
            if rng.random() < 0.8 or self.want_("branch_summary_usage"):
                f["usage"] = USAGE_PH
                u = self.side_usage(self.model, int(self.ctx), len(summ) // 4)
                self.features["branch_summary_usage"] += 1
            f["fromHook"] = False
            self.add("branch_summary", f, usage=u, kind="branch_summary", tokens=len(summ) // 4, parent=point)
            self.features["branch_summary"] += 1
        else:
            self.set_path_to(point)
            self.leaf = point
            self.features["branch_plain"] += 1

    def new_root(self):
        """resetLeaf()/branchWithSummary(null): a later entry becomes another root."""
        rng = self.rng
        self.tick(2000, 60_000)
        old = self.leaf
        if rng.random() < 0.5:
            summ = self.pools.text(rng, 200)
            self.add("branch_summary", {"fromId": old or "root", "summary": summ, "fromHook": False},
                     kind="branch_summary", tokens=len(summ) // 4, parent=None)
        else:
            self.path, self.pidx, self.leaf, self.ctx = [], {}, None, 0
        self.features["new_root"] += 1

    def compaction(self, force_mode=None):
        rng = self.rng
        if self.compactions >= 3 or (len(self.path) < 4 if self.era != "v1" else not self.v1_users):
            return
        self.compactions += 1
        self.tick(5000, 90_000)
        summ = "## Goal\n" + self.pools.text(rng, self.n("summary")) + "\n\n## Progress\n" + self.pools.text(rng, self.n("summary") // 2)
        tokens_before = int(self.ctx)
        if self.era == "v1":
            if not self.v1_users:
                return
            cands = self.v1_users[-6:]
            idx = rng.choice(cands)
            self.features["compaction"] += 1
            self.features["compaction_v1_index"] += 1
            kept = (self.ctx * rng.uniform(0.05, 0.3))
            self.add("compaction", {"summary": summ, "firstKeptEntryIndex": idx, "tokensBefore": tokens_before},
                     kind="compaction", tokens=int(kept) + len(summ) // 4)
            self.ctx = int(kept) + len(summ) // 4
            return
        # choose what to keep
        r = rng.random()
        last_comp = 0
        for i in range(len(self.path) - 1, -1, -1):
            if self.meta[self.path[i]][1] == "compaction":
                last_comp = i
                break
        mode = "real"
        if r < 0.15:
            mode = "none"
        elif r < 0.27:
            mode = "offpath"
        if force_mode:
            mode = {"older": "real", "missing": "offpath"}.get(force_mode, force_mode)
        first_kept = None
        kept_tokens = 0
        if mode == "real":
            older = [i for i in range(0, last_comp) if self.meta[self.path[i]][1] == "user"] if last_comp else []
            users = [i for i in range(last_comp + 1, len(self.path)) if self.meta[self.path[i]][1] == "user"]
            if older and (force_mode == "older" or (force_mode is None and rng.random() < 0.25)):
                i = older[-1]  # the kept range reaches back over the previous compaction
                self.features["compaction_keeps_older_compaction"] += 1
            elif users:
                i = users[-min(len(users), rng.randint(1, 3))]
            else:
                i = None
                mode = "none"
            if i is not None:
                first_kept = self.path[i]
                kept_tokens = sum(self.meta[e][2] for e in self.path[i:] if self.meta[e][1] != "system")
        if mode == "offpath":
            off = [e for e in self.order[-300:] if e not in self.pidx and self.meta[e][1] != "label"] if force_mode != "missing" else []
            if off:
                first_kept = rng.choice(off)
                self.features["compaction_first_kept_off_path"] += 1
            else:
                first_kept = "%08x" % rng.getrandbits(32)
                while first_kept in self.ids:
                    first_kept = "%08x" % rng.getrandbits(32)
                self.features["compaction_first_kept_missing"] += 1
        if mode == "real":
            self.features["compaction_first_kept_on_path"] += 1
        # retain-none: firstKeptEntryId = own id; ids are drawn inside add(), so pre-draw here
        own = None
        if mode == "none":
            own = self.new_id()
            first_kept = own
            self.features["compaction_retain_none"] += 1
        f = {"summary": summ, "firstKeptEntryId": first_kept, "tokensBefore": tokens_before}
        if rng.random() < 0.8:
            f["details"] = {"readFiles": [self.tool_path() for _ in range(rng.randint(0, 4))],
                            "modifiedFiles": [self.tool_path() for _ in range(rng.randint(0, 3))]}
        u = None
        use = rng.random() < 0.75
        if self.want_("compaction_usage"):
            use = True
        elif self.want_("compaction_no_usage"):
            use = False
        if use:
            f["usage"] = USAGE_PH
            u = self.side_usage(self.model, tokens_before, len(summ) // 4)
            self.features["compaction_usage"] += 1
        else:
            self.features["compaction_no_usage"] += 1
        if rng.random() < 0.7:
            f["fromHook"] = rng.random() < 0.1
        sys_tok = 0
        use = self.era in ("v3", "v3legacy") and self.has_system and rng.random() < 0.8
        if self.has_system and self.want_("compaction_system_message"):
            use = True
        elif self.want_("compaction_no_system_message"):
            use = False
        if use:
            sm = self.current_system_message(self.t)
            f["systemMessage"] = sm
            sys_tok = len(dumps(sm)) // 4
            self.features["compaction_system_message"] += 1
        else:
            self.features["compaction_no_system_message"] += 1
        self.features["compaction"] += 1
        after = len(summ) // 4 + sys_tok + kept_tokens
        eid = self.add("compaction", f, usage=u, kind="compaction", tokens=after, eid=own)
        self.comp_first_kept[eid] = first_kept
        self.cached = 0

    def forced_event(self, name):
        if name.startswith("compaction:"):
            self.compaction(force_mode=name.split(":")[1])
        elif name.startswith("context_edit:"):
            self.context_edit(mode=name.split(":")[1])
        elif name.startswith("model:"):  # model:<provider>/<model id>
            prov, mid = name[6:].split("/", 1)
            self.tick(500, 20_000)
            self.virtual = None
            self.model = MODEL_BY_KEY[(prov, mid)]
            self.cached = 0
            self.add("model_change", {"provider": prov, "modelId": mid})
            self.features["model_change"] += 1
        elif name.startswith("thinking:"):
            self.tick(500, 20_000)
            self.thinking = name.split(":")[1]
            self.add("thinking_level_change", {"thinkingLevel": self.thinking})
            self.features["thinking_level_change"] += 1
        elif name == "virtual_model":
            self.model_change(virtual=True)
        elif name == "branch_summary":
            self.branch(summary=True)
        elif name == "branch":
            self.branch(summary=False)
        elif name == "label:path":  # a label whose target is on the active path
            self.label(on_path=True)
        elif name == "quiet":  # no random side events from here on
            self.quiet = True
        elif name == "usage_unknown":
            self.usage_entry(unknown=True)
        elif name == "usage_tiny":
            self.usage_entry(unknown=True, tiny=True)
        else:
            getattr(self, name)()
        self.features["showcase_event"] += 1

    # -- driving ---------------------------------------------------------------------------------
    def run_turns(self, min_turns=1):
        rng = self.rng
        P = self.P
        ev = P.ev
        turns = 0
        while self.size < self.target or turns < min_turns or self.sub_pending:
            turns += 1
            for ev_name in self.forced.get(turns, ()):
                self.forced_event(ev_name)
            # random compactions leave room for the forced ones still to come (3 at most per session)
            reserved = sum(1 for t, names in self.forced.items() if t > turns for n in names if n.startswith("compaction:"))
            if self.quiet:
                pass
            elif self.era != "v1":
                if self.late_system and not self.has_system and turns > 1:
                    self.initial_system()  # an old session resumed by a newer Pi declares its prompt late
                    self.features["system_late"] += 1
                if self.has_system and rng.random() < ev["system_patch"]:
                    self.system_patch()
                if rng.random() < ev["model_change"]:
                    self.model_change()
                if self.era == "v3" and rng.random() < ev["virtual_model"]:
                    self.model_change(virtual=True)
                if rng.random() < ev["thinking_change"]:
                    self.thinking_change()
                if self.era in ("v3", "v3legacy"):
                    if rng.random() < ev["cache_warm"] and self.model.style == "anthropic":
                        self.usage_entry()
                    if rng.random() < ev["usage_unknown"]:
                        self.usage_entry(unknown=True)
                    if rng.random() < ev["session_info"]:
                        self.session_info()
                if rng.random() < ev["custom"]:
                    self.custom_entry()
                if rng.random() < ev["custom_message"]:
                    self.custom_message()
                if rng.random() < ev["label"]:
                    self.label()
                if self.era in ("v3", "v3legacy") and rng.random() < ev["context_edit"]:
                    self.context_edit()
                if self.era in ("v3", "v3legacy") and rng.random() < ev["context_edit_abandoned"]:
                    self.context_edit_abandoned()
                if rng.random() < ev["branch"]:
                    self.branch()
                elif rng.random() < ev["branch"] * 0.04:
                    self.new_root()
            else:
                if rng.random() < ev["model_change"]:
                    self.model_change()
                if rng.random() < ev["thinking_change"]:
                    self.thinking_change()
            if not self.quiet and rng.random() < ev["bash_exec"]:
                self.bash_execution()
            if (self.ctx > self.model.eff * 0.8 or (not self.quiet and rng.random() < ev["compaction_random"])) and \
                    self.compactions + reserved < 3:
                self.compaction()
            self.user_message()
            if self.sub_pending and self.size >= self.sub_pending[0][0] * self.target:
                _, k, spec = self.sub_pending.pop(0)
                self.g.subagent_call(self, spec, k)
            self.agent_turn()
        return turns


# --------------------------------------------------------------------------------------------
# Subagents: the files pi-subagents (nicobailon/pi-subagents 0.67, docs/subagents.md §2) writes
# --------------------------------------------------------------------------------------------

# agent name -> the (provider, model) its child sessions run on
SUBAGENT_AGENTS = [("worker", ("anthropic", "claude-haiku-4-5")), ("scout", ("anthropic", "claude-haiku-4-5")),
                   ("reviewer", ("anthropic", "claude-sonnet-4-5")), ("planner", ("openai", "gpt-5-mini")),
                   ("researcher", ("google", "gemini-2.5-flash")), ("docs.writer", ("openai", "gpt-5.1-codex"))]
SUBAGENT_CHILD_TOOLS = ["read", "bash", "grep", "find", "ls"]
PROMPT_REDACTED = "[prompt redacted]"
TRANSCRIPT_PAYLOAD_MAX = 32 * 1024  # child-transcript.ts MAX_TOOL_PAYLOAD_BYTES
TRANSCRIPT_TRUNCATION_MARKER = "\n\n… payload truncated"


def _child(kind="fresh", child=True, transcript=True, nested=False, compaction=False):
    return {"kind": kind, "nested": nested, "child": child, "transcript": transcript, "compaction": compaction}


# The first sessions that may call subagents get these calls, so that every variant is in every
# corpus of a few dozen sessions: a spec is one `subagent` tool call, one entry per child.
SUBAGENT_COVERAGE = [
    [{"mode": "parallel", "style": "usage", "children": [_child(compaction=True), _child(transcript=False),
                                                         _child(child=False)]},
     {"mode": "single", "style": "usage", "children": [_child(child=False, transcript=False)]}],
    [{"mode": "single", "style": "usage", "children": [_child(kind="fork")]},
     {"mode": "single", "style": "usage", "children": [_child(nested=True)]},
     {"mode": "single", "style": "old", "children": [_child()]}],
]
# a nested child's own call: one grandchild, everything written
SUBAGENT_NESTED_SPEC = {"mode": "single", "style": "usage", "children": [_child()]}


def subagent_spec(rng):
    """A random `subagent` call (plan time): single or parallel, usage (>= 0.59) or old style, and per
    child its kind and which of its files stay on disk."""
    parallel = rng.random() < 0.2
    style = "old" if rng.random() < 0.15 else "usage"
    children = []
    for _ in range(rng.randint(2, 3) if parallel else 1):
        kind, nested = "fresh", False
        r = rng.random()
        if not parallel and r < 0.12:
            kind = "fork"
        elif not parallel and r < 0.2:
            nested = True
        r = rng.random()
        child, transcript = (True, True) if r < 0.6 else (True, False) if r < 0.8 else (False, True) if r < 0.9 else (False, False)
        if style == "old" or kind == "fork" or nested:
            child = True  # these always keep their session file
        children.append(_child(kind, child, transcript, nested, rng.random() < 0.25))
    return {"mode": "parallel" if parallel else "single", "style": style, "children": children}


class Raw:
    """JSON text that js_dumps() writes as it is."""

    __slots__ = ("s",)

    def __init__(self, s):
        self.s = s


def js_dumps(o):
    """JSON.stringify(o) for dicts, lists, strings, numbers (floats as JavaScript prints them), Txt and Raw."""
    t = type(o)
    if t is dict:
        return "{" + ",".join(_encode(k) + ":" + js_dumps(v) for k, v in o.items()) + "}"
    if t is list or t is tuple:
        return "[" + ",".join(js_dumps(v) for v in o) + "]"
    if t is float:
        return js_num(o)
    if t is Txt:
        return '"' + bytes(o.b).decode("utf-8") + '"'
    if t is Raw:
        return o.s
    return _encode(o)


def js_len(s):
    """String#length: UTF-16 code units."""
    return len(s) + sum(1 for c in s if ord(c) > 0xFFFF)


_JS_SPACE = set("\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")


def sanitize_display_text(value):
    """pi-subagents sanitizeDisplayText for texts without escape sequences: runs of whitespace and
    control characters become one space, none leading or trailing."""
    out, pending = [], False
    for ch in value:
        cp = ord(ch)
        if cp <= 0x20 or 0x7F <= cp <= 0x9F or ch in _JS_SPACE:
            pending = bool(out)
        else:
            if pending:
                out.append(" ")
            out.append(ch)
            pending = False
    return "".join(out)


def preview_display_text(value, n):
    s = sanitize_display_text(value)
    if js_len(s) <= n:
        return s
    out, k = [], 0
    for ch in s:
        w = 2 if ord(ch) > 0xFFFF else 1
        if k + w > n - 3:
            break
        out.append(ch)
        k += w
    return "".join(out) + "..."


def tool_args_preview(args):
    """extractToolArgsPreview for the argument shapes of the children's tools."""
    for key in ("command", "path", "file_path", "pattern", "query", "url", "task", "describe", "search"):
        if isinstance(args.get(key), str):
            return preview_display_text(args[key], 60)
    return ""


def bounded_payload(text):
    """child-transcript.ts boundedPayload for a string: None when blank, cut at 32 KiB of UTF-8."""
    if not text.strip():
        return None
    b = text.encode("utf-8")
    if len(b) <= TRANSCRIPT_PAYLOAD_MAX:
        return text
    end = max(0, TRANSCRIPT_PAYLOAD_MAX - len(TRANSCRIPT_TRUNCATION_MARKER.encode("utf-8")))
    while end > 0 and (b[end] & 0xC0) == 0x80:
        end -= 1
    return b[:end].decode("utf-8") + TRANSCRIPT_TRUNCATION_MARKER


def js_pretty(o, ind=""):
    """JSON.stringify(o, null, 2) for tool arguments (strings, ints, booleans, lists, dicts)."""
    t = type(o)
    if t is dict:
        if not o:
            return "{}"
        inner = ind + "  "
        return "{\n" + ",\n".join(inner + _encode(k) + ": " + js_pretty(v, inner) for k, v in o.items()) + "\n" + ind + "}"
    if t is list:
        if not o:
            return "[]"
        inner = ind + "  "
        return "[\n" + ",\n".join(inner + js_pretty(v, inner) for v in o) + "\n" + ind + "]"
    if t is Txt:
        return _encode(o.raw())
    if t is float:
        return js_num(o)
    return _encode(o)


def content_text(content):
    """extractTextFromContent: the text blocks joined by newlines."""
    if isinstance(content, (str, Txt)):
        return content.raw() if type(content) is Txt else content
    parts = []
    for b in content or ():
        if isinstance(b, dict) and "text" in b and b.get("type") != "tool_result":
            t = b["text"]
            parts.append(t.raw() if type(t) is Txt else str(t))
    return "\n".join(parts)


def message_json(line):
    """The `message` object of a message entry's line (its last key), as text."""
    i = line.index(b',"message":')
    return line[i + 11:-2].decode("utf-8")


# The first session files of every corpus: each feature of FEATURE_CATALOGUE at least once, whatever
# the seed and size. A "new" step: (era, min_turns, {turn: [forced events]}, wanted features, quiet);
# a "fork" step: (how, position of the source in this list); "ghost": a source generated, never written, then forked.
_CE_WANTS = ["context_edit_target_user", "context_edit_target_assistant", "context_edit_target_toolResult",
             "context_edit_target_custom_message", "context_edit_null", "context_edit_string",
             "context_edit_string_normalized", "context_edit_array", "context_edit_same_target", "context_edit_off_path",
             "context_edit_compacted_target", "context_edit_target_compaction"]
SHOWCASE = [
    ("new", "v1", 7, {2: ["bash_execution"], 3: ["compaction:real"], 6: ["compaction:real"]}, ["v1_branchedFrom"], False),
    ("fork", "forkFrom", 0),  # fork of a v1 file
    ("new", "v2", 6, {2: ["custom_message", "label"], 3: ["compaction:real"], 5: ["branch_summary"]}, [], False),
    ("fork", "forkFrom", 2),  # fork of a v2 file
    ("new", "v3", 12, {2: ["compaction:real", "usage_tiny", "custom_message"], 3: ["branch_summary", "context_edit"],
                       4: ["compaction:none", "label", "session_info"], 5: ["context_edit", "system_patch"],
                       6: ["compaction:real", "custom_entry"], 7: ["branch", "usage_entry"], 8: ["context_edit", "new_root"],
                       9: ["label", "bash_execution"], 10: ["label", "session_info", "system_patch", "bash_execution"],
                       12: ["quiet", "label:path", "virtual_model"]},
     ["label_cleared", "session_info_cleared", "system_section_removed", "bash_exclude_from_context", "user_image",
      "user_content_string", "tool_result_error", "long_gap", "branch_summary_usage", "compaction_system_message",
      "compaction_usage", "responseModel_virtual"], False),
    ("fork", "branched", 4),
    ("new", "v3", 6, {2: ["compaction:offpath"], 3: ["branch_summary"], 4: ["compaction:offpath"], 5: ["context_edit"]},
     ["compaction_no_system_message", "compaction_no_usage"], False),
    ("fork", "forkFrom_cross_project", 6),
    ("new", "v3legacy", 5, {3: ["context_edit", "usage_entry"]}, [], False),
    ("fork", "clone_no_parent", 4),
    ("fork", "branched", 5),  # a fork of a fork
    # a tour of providers and stop reasons
    ("new", "v3", 10, {1: ["model:anthropic/claude-sonnet-4-5", "thinking:high"], 2: ["model:openrouter/openrouter/auto"],
                       3: ["model:openrouter/qwen/qwen3-coder"], 4: ["model:xai/grok-code-fast-1"],
                       5: ["model:ollama/qwen2.5-coder:32b"], 6: ["model:google/gemini-2.5-pro"], 7: ["model:openai/gpt-5"],
                       8: ["model:anthropic/claude-opus-4-5", "thinking:medium", "usage_entry"],
                       9: ["usage_unknown", "model:github-copilot/claude-sonnet-4.6"]},
     ["thinking_redacted", "cacheWrite1h", "responseModel_same", "cost_total_from_provider", "stop_aborted", "stop_error",
      "retry_after_error", "stop_length", "tool_result_usage"], True),
    # context edits of every kind: on and off the path, before the kept range, of the compaction itself, abandoned
    ("new", "v3", 11, {2: ["custom_message"], 3: ["branch", "context_edit:path"], 4: ["context_edit:off_path"],
                       5: ["compaction:real", "custom_message", "context_edit:compacted", "context_edit:path"],
                       6: ["context_edit_abandoned", "context_edit:path"], 7: ["context_edit:compaction", "context_edit:path"],
                       8: ["custom_message", "context_edit:path", "context_edit:path"], 9: ["context_edit:path", "compaction:missing"],
                       10: ["context_edit:compacted", "context_edit:path"], 11: ["context_edit:path"]}, _CE_WANTS, True),
    ("ghost", "branched", ("v3", 4, {2: ["label"]}, [], False)),
    # an older compaction inside the latest one's kept range
    ("new", "v3", 6, {3: ["compaction:real"], 5: ["compaction:older"], 6: ["compaction:none"]}, [], True),
]

# --------------------------------------------------------------------------------------------
# Corpus generator
# --------------------------------------------------------------------------------------------


class Generator:
    def __init__(self, out, seed, scale):
        self.out = out
        self.seed = seed
        self.scale = scale
        self.P = Profile(scale)
        self.pools = Pools(seed, scale)
        self.made_dirs = set()
        self.built = {}  # recent sessions of this process that a fork may need again

    # -- output ------------------------------------------------------------------------------
    def write_file(self, rel, data, row):
        """Writes one file; returns its manifest row."""
        path = os.path.join(self.out, rel)
        d = os.path.dirname(path)
        if d not in self.made_dirs:
            os.makedirs(d, exist_ok=True)
            self.made_dirs.add(d)
        with open(path, "wb", buffering=1 << 20) as f:
            if isinstance(data, (bytes, bytearray)):
                f.write(data)
                n = len(data)
                lines = data.count(b"\n") + (1 if n and not data.endswith(b"\n") else 0)
            else:  # a list of lines (bytes, each with its newline)
                f.writelines(data)
                n = sum(map(len, data))
                lines = len(data)
        row["path"] = rel
        row["bytes"] = n
        row["lines"] = lines
        return row

    @staticmethod
    def rel_for(cwd, header_ms, sid):
        return folder_for_cwd(cwd) + "/" + iso(header_ms).replace(":", "-").replace(".", "-") + "_" + sid + ".jsonl"

    def rel_of(self, s):
        return self.rel_for(s.cwd, ms_from_iso(s.header["timestamp"]), s.session_id)

    @staticmethod
    def session_row(s, damage=None, extra=None):
        row = {"kind": s.kind, "expect": "ok", "sessionId": s.session_id, "version": s.header.get("version"),
               "cwd": s.cwd, "parentSession": s.parent_session, "forkOf": s.fork_of,
               "features": dict(sorted(s.features.items())), "damage": damage}
        if s.inherited:
            row["inheritedFeatures"] = dict(s.inherited)
        if extra:
            row.update(extra)
        if s.sub_runs:
            row["subagentRuns"] = s.sub_runs
        return row

    @staticmethod
    def calls_of(s, lines=None):
        """The billed calls a reader can count in this file: [call id, kind, timestamp, provider, model,
        input, output, cacheRead, cacheWrite, cost] of the calls on the given lines (default: all)."""
        out = {}
        for li, cids in s.line_calls.items():
            if lines is None or li in lines:
                for c in cids:
                    out[c] = s.calls[c]
        return [[c, *v] for c, v in out.items()]

    def emit_session(self, s: Session, rel, *, damage=None, extra=None):
        row = self.session_row(s, damage, extra)
        data = s.lines
        countable = None
        if damage:
            data = self.apply_damage(s, damage, row)
            countable = row.pop("_countableLines")
        row["_calls"] = self.calls_of(s, countable)
        return self.write_file(rel, data, row)

    # -- sessions ------------------------------------------------------------------------------
    def pick_project(self, rng):
        return weighted(rng, PROJECTS)

    def new_session(self, idx, era, target, rng=None, forced=None, min_turns=1, wants=(), quiet=False, sub=None):
        rng = rng or random.Random(f"{self.seed}:session:{idx}")
        P = self.P
        cwd = self.pick_project(rng)
        lo, hi = ERA_RANGES[era]
        start = rng.randint(lo, hi)
        s = Session(self, rng, era, cwd, start, target)
        s.want = set(wants)
        s.quiet = quiet
        if "cacheWrite1h" in s.want:
            s.long_cache = True
        if forced:
            s.forced = forced
            if era == "v3legacy":
                s.late_system = True
        s.mult = max(0.6, min(4.0, (target / 2_000_000) ** 0.4)) if not P.small else 1.0
        s.model = weighted(rng, MODELS)
        if era == "v1":
            m = MODEL_BY_KEY[("anthropic", rng.choice(V1_MODELS[:2]))] if rng.random() < 0.8 else MODEL_BY_KEY[("openai", "gpt-5.1-codex")]
            s.model = m
            s.thinking = rng.choice(("off", "off", "low", "medium"))
            extra = {"provider": m.provider, "modelId": m.id, "thinkingLevel": s.thinking}
            if rng.random() < 0.2 or s.want_("v1_branchedFrom"):
                extra["branchedFrom"] = SESSIONS_ROOT + "/" + self.rel_for(cwd, start - rng.randint(60_000, 3_600_000), uuid4(rng))
                s.features["v1_branchedFrom"] += 1
            s.write_header(uuid4(rng), None, v1_extra=extra)
            s.kind = "v1"
            s.features["v1"] += 1
        elif era == "v2":
            s.write_header(uuid4(rng), 2)
            s.kind = "v2"
            s.features["v2"] += 1
        else:
            sid = uuid7(rng, start) if era == "v3" else uuid4(rng)
            s.write_header(sid, 3)
            s.kind = "v3" if era == "v3" else "v3-no-system"
            s.features["v3" if era == "v3" else "v3_no_system"] += 1
        s.cid_prefix = "n%d:" % idx
        s.rel = self.rel_of(s)
        # setup entries, flushed with the first user message
        s.tick(10, 400)
        if era != "v1":
            if rng.random() < 0.6:
                s.add("model_change", {"provider": s.model.provider, "modelId": s.model.id})
                s.features["model_change"] += 1
            if rng.random() < 0.5:
                s.thinking = rng.choice(THINKING_LEVELS[1:])
                s.add("thinking_level_change", {"thinkingLevel": s.thinking})
                s.features["thinking_level_change"] += 1
            if era == "v3":
                s.initial_system()
            if era in ("v3", "v3legacy") and rng.random() < (0.3 if P.small else 0.1):
                s.session_info()
        elif rng.random() < 0.3:
            s.thinking_change()
        if sub:
            # pi-subagents calls, each made at the first turn after the file reached a drawn share of its
            # target (a stream of its own: the rest of the corpus does not depend on it)
            frng = random.Random(f"{self.seed}:subturns:{idx}")
            s.sub_pending = sorted((frng.uniform(0.05, 0.85), k, spec) for k, spec in enumerate(sub))
        s.run_turns(min_turns=min_turns)
        return s

    @staticmethod
    def copy_branch(src, point, s):
        """Pi's createBranchedSession into `s` (header written): the path root..point of `src`, each entry
        copied with its id, timestamp and message, labels dropped (the next entry re-chained), then the
        labels re-created at the end with new ids."""
        chain = []
        cur = point
        while cur is not None:
            chain.append(cur)
            cur = src.meta[cur][0]
        chain.reverse()
        parent = None
        kept = []
        for e in chain:
            par, kind, tok, li = src.meta[e]
            if kind == "label":
                continue
            line = src.lines[li]
            if par != parent:
                line = re.sub(rb'"parentId":(null|"[^"]*")', b'"parentId":' + dumpb(parent), line, count=1)
                s.features["fork_rechained_after_label"] += 1
            s._append_line(line)
            cids = src.line_calls.get(li)
            if cids:
                s.line_calls[len(s.lines) - 1] = cids
                for c in cids:
                    s.calls[c] = src.calls[c]
            s.ids.add(e)
            s.meta[e] = [parent, kind, tok, len(s.lines) - 1]
            s.order.append(e)
            kept.append(e)
            parent = e
        for target_id, (label, lts) in src.labels.items():
            if target_id in s.meta:
                lid = s.new_id()
                s._append_line(dumpb({"type": "label", "id": lid, "parentId": parent, "timestamp": lts, "targetId": target_id, "label": label}, nl=True))
                s.meta[lid] = [parent, "label", 0, len(s.lines) - 1]
                s.order.append(lid)
                parent = lid
                s.labels[target_id] = (label, lts)
                s.features["fork_label_recreated"] += 1
        s.leaf = parent
        s.set_path_to(parent)
        s.compactions = sum(1 for e in s.path if s.meta[e][1] == "compaction")

    # -- forks -------------------------------------------------------------------------------------
    def fork_session(self, idx, src_entry, how, rng, target, wants=()):
        src = src_entry["session"]
        src_rel = src_entry["rel"]
        P = self.P
        target_cwd = src.cwd
        if how == "forkFrom_cross_project":
            target_cwd = self.pick_project(rng)
        last_ms = src.t
        start = last_ms + rng.randint(60_000, 5 * 86_400_000)
        s = Session(self, rng, "v3", target_cwd, start, max(target, src.size + (2_000 if P.small else 30_000)))
        s.mult = src.mult
        s.model = src.model
        s.thinking = src.thinking
        s.sys_sections, s.sys_tools, s.sys_content = dict(src.sys_sections), dict(src.sys_tools), list(src.sys_content)
        s.has_system = src.has_system
        s.want = set(wants)
        s.kind = "fork"
        s.fork_of = src_rel
        s.inherited = dict(sorted((src.features + Counter(src.inherited or {})).items()))
        sid = uuid7(rng, start)
        parent_path = SESSIONS_ROOT + "/" + src_rel
        if how == "clone_no_parent":
            s.write_header(sid, 3)
        else:
            s.write_header(sid, 3, parent_session=parent_path)
        s.cid_prefix = "f%d:" % idx
        s.rel = self.rel_of(s)
        s.features["fork_" + how] += 1
        if src.kind == "fork":
            s.features["fork_of_fork"] += 1
        elif src.era == "v2":
            s.features["fork_of_v2"] += 1
        if src_entry.get("ghost"):
            s.features["fork_parent_missing"] += 1
        if how == "branched" and src.era != "v1":
            # createBranchedSession: the path root..point, labels dropped and re-chained, labels re-created
            cands = [e for e in src.path if src.meta[e][1] in ("user", "assistant", "toolResult")]
            point = rng.choice(cands[len(cands) // 2:]) if cands and rng.random() < 0.6 and not s.want_("fork_at_leaf") else src.leaf
            self.copy_branch(src, point, s)
        else:
            # forkFrom / clone: every non-header line verbatim
            for li in range(1, len(src.lines)):
                s.copy_line(src, li)
            if src.era == "v1":
                s.features["fork_of_v1"] += 1
                s.omit_parent_once = True  # Pi's leaf is undefined after loading id-less entries
                s.leaf = None
                s.path, s.pidx = [], {}
                s.ctx = src.ctx
            else:
                for e in src.order:
                    s.meta[e] = list(src.meta[e])
                    s.ids.add(e)
                    s.order.append(e)
                s.labels = dict(src.labels)
                s.leaf = src.leaf
                s.set_path_to(src.leaf)
                s.compactions = sum(1 for e in s.path if s.meta[e][1] == "compaction")
        s.copied_lines = len(s.lines) - 1
        s.features["copied_entries"] = s.copied_lines
        s.t = start
        if s.model is None:
            s.model = weighted(rng, MODELS)
        s.run_turns(min_turns=1 if P.small else 2)
        return s

    # -- subagents (pi-subagents) -------------------------------------------------------------------
    def subagent_call(self, s, spec, k):
        """One `subagent` tool call in session `s` (a parent, or a child for a nested call): the assistant
        message with the call, the children's files (into s.extra_files), then the tool result with its
        `details` and, in the >= 0.59 style, the `usage` that sums the children's answers."""
        rng = random.Random(f"{self.seed}:subagent:{s.cid_prefix}{k}")
        run_id = uuid4(rng)
        stem = s.rel[:-len(".jsonl")]
        art_dir = s.rel.rsplit("/", 1)[0] + "/subagent-artifacts"
        kids = spec["children"]
        usage_style = spec["style"] == "usage"
        tasks = []
        for _ in kids:
            agent, mkey = SUBAGENT_AGENTS[int(rng.random() * len(SUBAGENT_AGENTS))]
            tasks.append((agent, mkey, self.pools.text(rng, s.n("user"))))
        if spec["mode"] == "single":
            args = {"agent": tasks[0][0], "task": tasks[0][2]}
            if kids[0]["kind"] == "fork":
                args["context"] = "fork"
        else:
            args = {"tasks": [{"agent": a, "task": t} for a, _, t in tasks]}
        call = {"type": "toolCall", "id": s.tool_call_id("subagent"), "name": "subagent", "arguments": args}
        s.features["tool_call"] += 1
        aid = self.subagent_request(s, call)
        t0 = s.t
        end = t0
        results, infos, agg = [], [], []
        outputs = []
        for i, ch in enumerate(kids):
            agent, mkey, task = tasks[i]
            crng = random.Random(f"{self.seed}:subagent:{s.cid_prefix}{k}:{i}")
            start = t0 + rng.randint(30, 900) + i * rng.randint(5, 400)
            c = self.subagent_child(s, aid, ch, crng, run_id, i, agent, mkey, task, start, stem, k)
            end = max(end, c.t)
            # the child's answers: all its assistant messages (every attempt), not its compactions
            acids = [c.line_calls[li][0] for li, m, _u, _t in c.msg_log if m.get("role") == "assistant"]
            sums = [0, 0, 0, 0, 0]
            for cid in acids:
                v = c.calls[cid]
                for j in range(5):
                    sums[j] += v[4 + j]
            own = [c.calls["%s%d" % (c.cid_prefix, n)] for n in range(c.ncalls)]
            tr_rel = "%s/%s_%s_%d_transcript.jsonl" % (art_dir, run_id, re.sub(r"[^\w.-]", "_", agent, flags=re.ASCII), i)
            r = {"index": i, "agent": agent, "task": PROMPT_REDACTED, "exitCode": 0, "model": "%s/%s" % mkey}
            u = {"input": sums[0], "output": sums[1], "cacheRead": sums[2], "cacheWrite": sums[3], "cost": sums[4], "turns": len(acids)}
            if usage_style:
                r["usage"] = u
            r["sessionFile"] = SESSIONS_ROOT + "/" + c.rel
            r["transcriptPath"] = SESSIONS_ROOT + "/" + tr_rel
            results.append(r)
            last = [m for _li, m, _u, _t in c.msg_log if m.get("role") == "assistant" and content_text(m["content"])]
            outputs.append((agent, content_text(last[-1]["content"]) if last else "(no output)"))
            if ch["child"]:
                s.extra_files.append((c.rel, c.lines, self.child_row(c, s, run_id, i, agent)))
                s.extra_files.extend(c.extra_files)
            elif usage_style:
                agg.extend(acids)  # the aggregate is the only count of this child's answers
                for cid in acids:
                    s.calls[cid] = c.calls[cid]
            if ch["transcript"]:
                s.extra_files.append((tr_rel, self.subagent_transcript(c, run_id, agent, i, s.cwd, start - crng.randint(1, 40)),
                                      {"kind": "artifact", "expect": "rejected", "features": {"subagent_transcript": 1}, "damage": None,
                                       "subagentOf": {"parent": s.rel, "runId": run_id, "index": i, "agent": agent},
                                       "childSession": c.rel, "childSessionWritten": ch["child"],
                                       "_calls": [[cid, *c.calls[cid]] for cid in acids]}))
            s.features[("subagent_child_and_transcript", "subagent_child_missing", "subagent_transcript_deleted",
                        "subagent_both_missing")[(not ch["child"]) + 2 * (not ch["transcript"])]] += 1
            if ch["kind"] == "fork":
                s.features["subagent_fork_child"] += 1
            if ch["nested"]:
                s.features["subagent_nested"] += 1
            infos.append({"index": i, "agent": agent, "kind": ch["kind"], "nested": ch["nested"], "sessionFile": c.rel,
                          "sessionWritten": ch["child"], "transcript": tr_rel, "transcriptWritten": ch["transcript"],
                          "answers": dict(u), "ownCalls": {"calls": len(own), "input": sum(v[4] for v in own),
                                                           "output": sum(v[5] for v in own), "cacheRead": sum(v[6] for v in own),
                                                           "cacheWrite": sum(v[7] for v in own), "cost": math.fsum(v[8] for v in own)}})
        s.features["subagent_call"] += 1
        if spec["mode"] == "parallel":
            s.features["subagent_parallel"] += 1
        if not usage_style:
            s.features["subagent_old_style"] += 1
        # the tool result, when the last child is done
        s.t = end + rng.randint(40, 1500)
        mts = s.t
        s.tick(2, 60)
        if spec["mode"] == "single":
            text = outputs[0][1]
        else:
            text = "Parallel: %d/%d succeeded\n\n" % (len(kids), len(kids)) + "\n\n".join("=== %s ===\n%s" % o for o in outputs)
        details = {"mode": spec["mode"], "runId": run_id, "results": results}
        msg = {"role": "toolResult", "toolCallId": call["id"], "toolName": "subagent", "content": [{"type": "text", "text": text}],
               "details": details}
        if usage_style:
            tot = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "cost": 0, "turns": 0}
            for r in results:
                for key in tot:
                    tot[key] += r["usage"][key]
            details["totalChildUsage"] = tot
            details["totalCost"] = {"inputTokens": tot["input"], "outputTokens": tot["output"], "costUsd": tot["cost"]}
            msg["usage"] = Raw('{"input":%d,"output":%d,"cacheRead":%d,"cacheWrite":%d,"totalTokens":%d,'
                               '"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":%s}}' % (
                                   tot["input"], tot["output"], tot["cacheRead"], tot["cacheWrite"],
                                   tot["input"] + tot["output"] + tot["cacheRead"] + tot["cacheWrite"], js_num(tot["cost"])))
        msg["isError"] = False
        msg["durationMs"] = mts - t0
        msg["timestamp"] = mts
        s.features["tool_result"] += 1
        s.add("message", {"message": USAGE_PH}, usage=js_dumps(msg), kind="toolResult", tokens=len(text) // 4, calls=agg)
        if s.msg_log is not None:
            li, _m, _u, tms = s.msg_log[-1]
            s.msg_log[-1] = (li, msg, None, tms)
        s.sub_runs.append({"runId": run_id, "mode": spec["mode"], "style": spec["style"], "toolCallId": call["id"],
                           "children": infos})

    def subagent_request(self, s, call):
        """The parent's assistant message that holds the `subagent` tool call."""
        rng, m = s.rng, s.model
        blocks = []
        think = out = 0
        if s.thinking != "off" and m.reasoning and rng.random() < s.P.think:
            b, n = s.thinking_block()
            blocks.append(b)
            think += n
            s.features["thinking"] += 1
        if rng.random() < 0.6:
            t = s.pools.text_t(rng, s.n("text"))
            blocks.append({"type": "text", "text": t})
            out += t.n
        blocks.append(call)
        out += len(call["name"]) + jlen(call["arguments"])
        mts = s.t
        s.tick(800, 30_000)
        usage, _ = s.call_usage(m, out // 4 + 1, (think + 3) // 4)
        msg = {"role": "assistant", "content": blocks, "api": m.api, "provider": m.provider, "model": m.id,
               "usage": USAGE_PH, "stopReason": "toolUse", "timestamp": mts}
        if m.style == "anthropic" and rng.random() < 0.7:
            msg["responseId"] = "msg_01" + s.pools.alnum_text(rng, 22)
        elif m.style == "openai":
            msg["responseId"] = "resp_" + "%048x" % rng.getrandbits(192)
        msg["thinkingLevel"] = s.thinking
        s.features["assistant"] += 1
        s.features["provider_" + m.provider] += 1
        return s.add("message", {"message": msg}, usage=usage, kind="assistant", tokens=(out + think) // 4)

    def subagent_child(self, s, aid, ch, rng, run_id, i, agent, mkey, task, start, stem, k):
        """Child i of a call: a fresh session `S/<runId>/run-<i>/session.jsonl` (header without
        parentSession), or a fork `S/forks/<ts>_<id>.jsonl` that starts with the parent's path up to
        the calling message (createBranchedSession). Its answers fall inside the parent's tool call."""
        c = Session(self, rng, "v3", s.cwd, start, 0)
        c.cid_prefix = "%sa%d.%d:" % (s.cid_prefix, k, i)
        c.mult = min(s.mult, 1.5)
        c.quiet = True
        model = MODEL_BY_KEY[mkey]
        if ch["kind"] == "fork":
            sid = uuid7(rng, start)
            c.write_header(sid, 3, parent_session=SESSIONS_ROOT + "/" + s.rel)
            c.rel = "%s/forks/%s_%s.jsonl" % (stem, iso(start).replace(":", "-").replace(".", "-"), sid)
            self.copy_branch(s, aid, c)
            c.copied_lines = len(c.lines) - 1
            c.features["copied_entries"] = c.copied_lines
            c.kind, c.fork_of = "subagent_fork", s.rel
            c.sys_sections, c.sys_tools, c.sys_content = dict(s.sys_sections), dict(s.sys_tools), list(s.sys_content)
            c.has_system, c.thinking, c.model, c.cached = s.has_system, s.thinking, s.model, s.cached
            c.tick(5, 200)
            if model is not s.model:
                c.model = model
                c.cached = 0
                c.add("model_change", {"provider": model.provider, "modelId": model.id})
                c.features["model_change"] += 1
        else:
            c.write_header(uuid7(rng, start), 3)
            c.rel = "%s/%s/run-%d/session.jsonl" % (stem, run_id, i)
            c.kind = "subagent_child"
            c.model = model
            c.tick(5, 200)
            c.add("model_change", {"provider": model.provider, "modelId": model.id})
            c.features["model_change"] += 1
            if model.reasoning and rng.random() < 0.5:
                c.thinking = rng.choice(THINKING_LEVELS[1:4])
                c.add("thinking_level_change", {"thinkingLevel": c.thinking})
                c.features["thinking_level_change"] += 1
            c.initial_system()
        c.msg_log = []
        c.tick(10, 400)
        text = "Task: " + task
        mts = c.t
        c.tick(1, 40)
        c.add("message", {"message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": mts}},
              kind="user", tokens=len(text) // 4)
        steps = max(2, min(6, 1 + int(rng.expovariate(1 / 2.0)) + 1))
        comp_at = rng.randint(1, steps - 1) if ch["compaction"] else -1

        def compact():
            c.want.add("compaction_usage")
            c.compaction()
            c.want.discard("compaction_usage")
            if c.compactions:
                c.features["subagent_child_compaction"] += 1

        for st in range(steps):
            if st == 0 and ch["nested"]:
                self.subagent_call(c, SUBAGENT_NESTED_SPEC, 0)
            if st == comp_at:
                compact()
            calls, stop = c.assistant_message(st == steps - 1, SUBAGENT_CHILD_TOOLS)
            if stop in ("aborted", "error"):
                if stop == "error" and rng.random() < 0.7:
                    c.tick(1000, 20_000)  # the retry, in the same file
                    c.assistant_message(True, SUBAGENT_CHILD_TOOLS)
                    c.features["retry_after_error"] += 1
                break
            if calls:
                c.tool_results(calls)
        if ch["compaction"] and not c.compactions:
            compact()  # the run ended early: Pi compacts after the agent's end
        return c

    def child_row(self, c, s, run_id, i, agent):
        row = self.session_row(c, extra={"subagentOf": {"parent": s.rel, "runId": run_id, "index": i, "agent": agent}})
        row["_calls"] = self.calls_of(c)
        return row

    def subagent_transcript(self, c, run_id, agent, i, cwd, t_first):
        """`<runId>_<agent>_<i>_transcript.jsonl` (child-transcript.ts, version 1): the redacted prompt,
        then the child's own messages as its session saw them (message_end), with tool_start/tool_end."""
        out = []
        last = [t_first]

        def rec(rtype, ts, fields, message=None):
            ts = max(ts, last[0])
            last[0] = ts
            d = {"version": 1, "recordType": rtype, "source": "foreground", "runId": run_id, "agent": agent, "childIndex": i,
                 "cwd": cwd, "ts": ts, "timestamp": iso(ts)}
            d.update(fields)
            if message is not None:
                d["message"] = Raw(message)
            out.append((js_dumps(d) + "\n").encode("utf-8"))

        prompt = PROMPT_REDACTED + "; live Prompt Audit only."
        rec("message", t_first, {"sourceEventType": "initial_prompt", "role": "user", "text": prompt,
                                 "message": {"role": "user", "content": [{"type": "text", "text": prompt}]}})
        calls = {}
        for li, m, usage, tms in c.msg_log:
            role = m.get("role")
            if role == "user":
                text = content_text(m["content"])
                rec("message", tms, {"sourceEventType": "message_end", "role": "user", **({"text": text} if text else {})},
                    message_json(c.lines[li]))
            elif role == "assistant":
                f = {"sourceEventType": "message_end", "role": "assistant"}
                text = content_text(m["content"])
                if text:
                    f["text"] = text
                f["model"] = m["model"]
                f["stopReason"] = m["stopReason"]
                if m.get("errorMessage"):
                    f["errorMessage"] = m["errorMessage"]
                u = json.loads(usage)
                f["usage"] = {"input": u["input"], "output": u["output"], "cacheRead": u["cacheRead"],
                              "cacheWrite": u["cacheWrite"], "cost": u["cost"]["total"]}
                rec("message", tms, f, message_json(c.lines[li]))
                for b in m["content"]:
                    if b.get("type") == "toolCall":
                        calls[b["id"]] = b
            elif role == "toolResult":
                b = calls.get(m["toolCallId"], {})
                args = b.get("arguments") or {}
                f = {"sourceEventType": "tool_execution_start", "toolCallId": m["toolCallId"], "toolName": m["toolName"]}
                if args:
                    f["argsPreview"] = tool_args_preview(args)
                    payload = bounded_payload(js_pretty(args))
                    if payload:
                        f["argsPayload"] = payload
                rec("tool_start", last[0] + 1, f)
                rec("tool_end", tms, {"sourceEventType": "tool_execution_end", "toolCallId": m["toolCallId"],
                                                 "toolName": m["toolName"], "isError": m["isError"]})
                output = bounded_payload(content_text(m["content"]))
                f = {"sourceEventType": "message_end", "role": "toolResult", "toolCallId": m["toolCallId"],
                     "toolName": m["toolName"], "isError": m["isError"]}
                if output:
                    f["text"] = output
                    f["outputTruncated"] = "… payload truncated" in output
                reduced = {"role": "toolResult", "toolCallId": m["toolCallId"], "toolName": m["toolName"], "isError": m["isError"],
                           "content": [{"type": "text", "text": output}] if output else [], "timestamp": m["timestamp"]}
                f["message"] = reduced
                rec("message", tms, f)
        return out

    # -- damaged and stray files ------------------------------------------------------------------
    DAMAGE_KINDS = ["truncated_tail", "no_final_newline", "blank_lines", "malformed_line", "crlf",
                    "stray_non_session", "stray_nested", "empty", "only_blank", "bom", "header_not_first",
                    "scalar_lines", "unknown_type", "invalid_utf8", "duplicate_ids"]
    # what Pi 1.6.0 does with each kind (the oracle's status), checked by check_corpus.mjs
    DAMAGE_EXPECT = {"bom": "rejected", "header_not_first": "rejected", "stray_non_session": "rejected",
                     "stray_nested": "rejected", "empty": "rejected", "only_blank": "rejected"}
    SCALARS_KEPT = ["42", '"note to self"', "[1,2,3]", "-1.5", '"日本語 ✅"', '["a",{"b":null}]', "true", "7"]
    SCALARS_DROPPED = ["null", "0", "false", '""']
    INVALID_UTF8 = [b"\xff", b"\xfe\xfe", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xc0\xaf",
                    b"\x80\x80", b"\xf8\x88\x80\x80\x80", b"caf\xe9", b"\xf4\x90\x80\x80"]

    def apply_damage(self, s, kind, row):
        """The session's lines with one kind of damage, as bytes. row gets `damagedLines`: the
        0-based physical lines that are deliberately not what JSON.stringify writes (or not entries)."""
        rng = s.rng
        lines = [b[:-1].decode("utf-8") for b in s.lines]
        orig = list(range(len(lines)))  # line -> the session's line it holds (None: an inserted line)
        damaged = set()
        sep, end = "\n", "\n"
        raw = {}  # line index -> bytes (invalid UTF-8)
        if kind == "truncated_tail":
            last = lines[-1]
            cut = rng.randint(max(1, len(last) // 4), max(2, len(last) - 2))
            lines[-1] = last[:cut]
            end = ""
            damaged.add(len(lines) - 1)
            row["pendingTailChars"] = cut
        elif kind == "no_final_newline":
            end = ""
        elif kind == "blank_lines":
            out, oorig = [], []
            for i, l in enumerate(lines):
                out.append(l)
                oorig.append(i)
                if i == 0 or rng.random() < 0.15:
                    out.append(rng.choice(("", "   ", "\t", "")))
                    oorig.append(None)
                    damaged.add(len(out) - 1)
            out.append("")
            oorig.append(None)
            damaged.add(len(out) - 1)
            lines, orig = out, oorig
        elif kind == "malformed_line":
            i = rng.randint(2, max(2, len(lines) - 1))
            bad = lines[min(i, len(lines) - 1)][: rng.randint(10, 60)]
            lines.insert(i, bad)
            orig.insert(i, None)
            lines.insert(1, "{not json at all")
            orig.insert(1, None)
            damaged.update((1, i + 1))
            row["malformedLines"] = 2
        elif kind == "crlf":
            sep = end = "\r\n"
        elif kind == "bom":
            lines[0] = "\ufeff" + lines[0]
        elif kind == "header_not_first":
            lines[0], lines[1] = lines[1], lines[0]
            orig[0], orig[1] = orig[1], orig[0]
        elif kind == "scalar_lines":
            # JSON values that are not objects, mid-file; sometimes one is the last line, so the leaf
            vals = [rng.choice(self.SCALARS_KEPT)] + [rng.choice(self.SCALARS_KEPT + self.SCALARS_DROPPED) for _ in range(rng.randint(0, 3))]
            for v in vals:
                p = rng.randint(2, len(lines) - 1)
                lines.insert(p, v)
                orig.insert(p, None)
                damaged = {d + (d >= p) for d in damaged} | {p}
            if rng.random() < 0.25:
                lines.append(rng.choice(self.SCALARS_KEPT + self.SCALARS_DROPPED))
                orig.append(None)
                damaged.add(len(lines) - 1)
                row["scalarLeaf"] = True
        elif kind == "unknown_type":
            # objects with a type Pi does not know: some on the tree (the next entry re-chained to them), some without ids
            for j in range(rng.randint(2, 4)):
                p = rng.randint(2, len(lines) - 1)
                prev = json.loads(lines[p - 1])
                t = rng.choice(("x-telemetry", "ext:audit-log", "checkpoint", "message_v9"))
                if j % 2 == 0 and isinstance(prev, dict) and isinstance(prev.get("id"), str):
                    nid = s.new_id()
                    e = {"type": t, "id": nid, "parentId": prev["id"], "timestamp": prev.get("timestamp"),
                         "data": {"seq": j, "note": rng.choice(("render", "flush", "ツール"))}}
                    old = '"parentId":%s' % dumps(prev["id"])
                    if old in lines[p] and rng.random() < 0.7:
                        lines[p] = lines[p].replace(old, '"parentId":%s' % dumps(nid), 1)
                        row["unknownOnPath"] = row.get("unknownOnPath", 0) + 1
                else:
                    e = {"type": t, "timestamp": prev.get("timestamp") if isinstance(prev, dict) else None, "event": "tick", "ms": rng.randint(1, 900)}
                lines.insert(p, dumps(e))
                orig.insert(p, None)
                damaged = {d + (d >= p) for d in damaged}
            if rng.random() < 0.25:  # the last entry, so the leaf, of an unknown type
                last = json.loads(lines[-1])
                e = {"type": "x-telemetry", "timestamp": last.get("timestamp"), "event": "exit"}
                if rng.random() < 0.5:
                    e = {"type": "x-telemetry", "id": s.new_id(), "parentId": last.get("id"), "timestamp": last.get("timestamp"), "event": "exit"}
                lines.append(dumps(e))
                orig.append(None)
                row["unknownLeaf"] = True
            row["unknownTypes"] = j + 1
        elif kind == "invalid_utf8":
            cands = [i for i in range(1, len(lines)) if '"text":"' in lines[i]] or \
                    [i for i in range(1, len(lines)) if '"content":"' in lines[i]]
            for i in rng.sample(cands, min(len(cands), rng.randint(1, 2))):
                key = '"text":"' if '"text":"' in lines[i] else '"content":"'
                k = lines[i].index(key) + len(key)
                bad = b"".join(rng.choice(self.INVALID_UTF8) for _ in range(rng.randint(1, 3)))
                raw[i] = lines[i][:k].encode("utf-8") + bad + lines[i][k:].encode("utf-8")
                damaged.add(i)
        elif kind == "duplicate_ids":
            self.duplicate_id(s, rng, lines, damaged, row, orig)
        row["expect"] = self.DAMAGE_EXPECT.get(kind, "ok")
        row["damagedLines"] = sorted(damaged)
        parts = [raw[i] if i in raw else l.encode("utf-8") for i, l in enumerate(lines)]
        # the session lines whose usages a reader still gets: Pi accepts the file and parses the line
        # (a damaged line that still parses, e.g. invalid UTF-8 in a text or a duplicate id, counts)
        ok = set()
        if row["expect"] == "ok":
            for i, o in enumerate(orig):
                if o is not None and (i not in damaged or _pi_parses(parts[i])):
                    ok.add(o)
        row["_countableLines"] = ok
        return sep.encode().join(parts) + end.encode()

    @staticmethod
    def duplicate_id(s, rng, lines, damaged, row, orig):
        """Two entries with the same id. Either a later entry X takes the id of an earlier entry A
        that is not its ancestor (X's children follow it), or an earlier line is repeated later.
        Neither can make a parent chain loop."""
        line_of = {e: s.meta[e][3] for e in s.order}
        ids = [e for e in s.order if '","id":"%s","parentId"' % e in lines[line_of[e]][:60]]
        if len(ids) >= 4 and rng.random() < 0.6:
            for x in rng.sample(ids[len(ids) // 2:], min(8, len(ids) - len(ids) // 2)):
                anc = set()
                cur = x
                while cur is not None:
                    anc.add(cur)
                    cur = s.meta[cur][0]
                cands = [a for a in s.order[: s.order.index(x)] if a not in anc]
                if not cands:
                    continue
                a = rng.choice(cands)
                li = line_of[x]
                lines[li] = lines[li].replace('"id":"%s"' % x, '"id":"%s"' % a, 1)
                for e in s.order:
                    if s.meta[e][0] == x:
                        lj = line_of[e]
                        lines[lj] = lines[lj].replace('"parentId":"%s"' % x, '"parentId":"%s"' % a, 1)
                damaged.add(li)
                row["duplicateIdMode"] = "reused"
                return
        a = rng.choice(s.order[:-1])
        p = rng.randint(line_of[a] + 1, len(lines) - 1)
        lines.insert(p, lines[line_of[a]])
        orig.insert(p, line_of[a])
        damaged.add(p)
        row["duplicateIdMode"] = "repeated_line"

    def emit_damaged(self, kind, idx):
        rng = random.Random(f"{self.seed}:damage:{kind}:{idx}")
        if kind in ("stray_non_session", "stray_nested", "empty", "only_blank"):
            cwd = self.pick_project(rng)
            folder = folder_for_cwd(cwd)
            t = rng.randint(*ERA_RANGES["v3"])
            if kind == "empty":
                rel = self.rel_for(cwd, t, uuid7(rng, t))
                data = b""
            elif kind == "only_blank":
                rel = self.rel_for(cwd, t, uuid7(rng, t))
                data = b"\n  \n\n"
            else:
                lines = []
                t = rng.randint(*ERA_RANGES["v3"])
                for i in range(rng.randint(3, 30)):
                    t += rng.randint(10, 5000)
                    lines.append(dumps({"event": rng.choice(("start", "tool", "message", "end")), "ts": iso(t), "seq": i,
                                        "text": self.pools.text(rng, rng.randint(20, 400))}))
                data = ("\n".join(lines) + "\n").encode()
                if kind == "stray_nested":
                    rel = folder + "/" + uuid4(rng) + "/subagent-%d.jsonl" % rng.randint(1, 9)
                else:
                    rel = folder + "/" + rng.choice(("transcript", "ext-audit", "todo-log")) + "-%06x.jsonl" % rng.getrandbits(24)
            return [self.write_file(rel, data, {"kind": "stray" if kind.startswith("stray") else "damaged", "expect": "rejected",
                                                "damage": kind, "damagedLines": [0, 1, 2] if kind == "only_blank" else [],
                                                "features": {}})]
        P = self.P
        s = self.new_session(10_000_000 + idx, "v3" if kind != "blank_lines" or rng.random() < 0.5 else "v1",
                             min(P.session_target(rng), 40_000), rng=rng)
        s.kind = "damaged"
        return [self.emit_session(s, self.rel_of(s), damage=kind)]

    # -- the plan ----------------------------------------------------------------------------------
    def plan(self, n_sessions=None, n_bytes=None):
        """Yields the corpus as a sequence of tasks: sessions (dicts that say how to build them,
        a fork holding its source's dict) and damaged/stray files. The plan depends only on the seed,
        the scale and n_sessions|n_bytes, never on what a task produced, so that tasks can run in any
        order and in any process. It is endless with n_bytes: the caller stops consuming it."""
        P = self.P
        seed = self.seed
        fork_p = 0.12 if P.small else 0.07
        cache_limit = 400_000 if P.small else 6_000_000  # forks only of sources up to this (planned) size
        margin = 2_000 if P.small else 30_000
        damage_every = 6 if P.small else 90  # damaged files at a steady rate
        sub_p = 0.3 if P.small else 0.05  # share of new v3 sessions that call subagents (after the coverage bundles)
        cov = 0
        recent = []  # (task, planned size, fork depth) of the last sessions that may be forked
        planned = 0
        dmg_i = 0
        show = []
        idx = 0
        while n_sessions is None or idx < max(n_sessions, len(SHOWCASE)):
            t0 = P.session_target(random.Random(f"{seed}:target:{idx}"))
            depth = 0
            if idx < len(SHOWCASE):
                step = SHOWCASE[idx]
                if step[0] == "new":
                    _, era, min_turns, forced, wants, quiet = step
                    e = {"t": "new", "idx": idx, "era": era, "target": min(t0, 30_000 if P.small else 400_000), "forced": forced,
                         "min_turns": min_turns, "wants": wants, "quiet": quiet}
                    est = e["target"]
                elif step[0] == "fork":
                    src, src_est, depth = show[step[2]]
                    e = {"t": "fork", "idx": idx, "how": step[1], "src": src, "rng": f"{seed}:fork:{idx}", "target": t0, "era": "v3",
                         "wants": ["fork_at_leaf"]}
                    est, depth = max(t0, src_est + margin), depth + 1
                else:  # ghost
                    era, min_turns, forced, wants, quiet = step[2]
                    src = {"t": "new", "idx": idx, "era": era, "target": min(t0, 30_000 if P.small else 400_000), "forced": forced,
                           "min_turns": min_turns, "wants": wants, "quiet": quiet, "ghost": True}
                    e = {"t": "fork", "idx": idx, "how": step[1], "src": src, "rng": f"{seed}:ghostfork:{idx}", "target": t0, "era": "v3"}
                    est = max(t0, src["target"] + margin)
                e["showcase"] = True
                show.append((e, est, depth))
            else:
                rng = random.Random(f"{seed}:plan:{idx}")
                if recent and rng.random() < fork_p:
                    src, src_est, depth = rng.choice(recent)
                    how = weighted(rng, [(30, "branched"), (25, "forkFrom"), (20, "forkFrom_cross_project"), (10, "clone_no_parent")])
                    if src["era"] in ("v1", "v2"):
                        how = "forkFrom"  # Pi's forkFrom copies raw (unmigrated) lines
                    e = {"t": "fork", "idx": idx, "how": how, "src": src, "rng": f"{seed}:fork:{idx}", "target": t0, "era": "v3"}
                    est, depth = max(t0, src_est + margin), depth + 1
                else:
                    era = weighted(rng, [(5, "v1"), (5, "v2"), (15, "v3legacy"), (75, "v3")])
                    target = t0
                    if n_bytes is not None and not P.small:
                        # do not overshoot --bytes by a huge file at the end (planned sizes, not actual ones)
                        target = min(t0, max(n_bytes - planned, n_bytes // 150, 6_000))
                    e = {"t": "new", "idx": idx, "era": era, "target": target}
                    est = target
                    if rng.random() < (0.04 if P.small else 0.02):
                        # a source that the user deleted later: generated, never written, forked right away
                        how = "forkFrom" if era in ("v1", "v2") else rng.choice(("branched", "forkFrom"))
                        t1 = P.session_target(random.Random(f"{seed}:target2:{idx}"))
                        e = {"t": "fork", "idx": idx, "how": how, "src": dict(e, ghost=True), "rng": f"{seed}:ghostfork:{idx}",
                             "target": t1, "era": "v3"}
                        est, depth = max(t1, target + margin), 1
            if e["t"] == "new" and e["era"] == "v3" and not e.get("showcase"):
                # pi-subagents calls (drawn from a stream of their own, so the plan does not change):
                # the first eligible sessions get the coverage bundles, then a share of them random calls
                if cov < len(SUBAGENT_COVERAGE):
                    e["sub"] = SUBAGENT_COVERAGE[cov]
                    cov += 1
                else:
                    srng = random.Random(f"{seed}:subplan:{idx}")
                    if srng.random() < sub_p:
                        e["sub"] = [subagent_spec(srng) for _ in range(1 if srng.random() < 0.75 else 2)]
            e["est"] = est
            yield e
            planned += est
            if est <= cache_limit and depth < 3:
                recent.append((e, est, depth))
                if len(recent) > 6:
                    recent.pop(0)
            idx += 1
            if idx % damage_every == 0:
                yield {"t": "damage", "kind": DAMAGE_KINDS[dmg_i % len(DAMAGE_KINDS)], "n": dmg_i, "est": 20_000}
                planned += 20_000
                dmg_i += 1

    # -- tasks ----------------------------------------------------------------------------------------
    def build(self, e):
        """The Session of a plan task; a fork builds its source first (again, unless this process
        built it recently: a session is a function of its task, so that changes nothing)."""
        key = (e["t"], e["idx"], bool(e.get("ghost")))
        if key in self.built:
            return self.built[key]
        if e["t"] == "new":
            s = self.new_session(e["idx"], e["era"], e["target"], forced=e.get("forced"), min_turns=e.get("min_turns", 1),
                                 wants=e.get("wants", ()), quiet=e.get("quiet", False), sub=e.get("sub"))
        else:
            src = self.build(e["src"])
            s = self.fork_session(e["idx"], {"session": src, "rel": self.rel_of(src), "ghost": e["src"].get("ghost")},
                                  e["how"], random.Random(e["rng"]), e["target"], wants=e.get("wants", ()))
        if e.get("showcase"):
            s.features["showcase"] += 1
        if s.size <= (400_000 if self.P.small else 6_000_000):  # what plan() lets be forked
            self.built[key] = s
            while len(self.built) > 8:
                del self.built[next(iter(self.built))]
        return s

    def run_task(self, e):
        """Writes the file(s) of one task; returns their manifest rows."""
        if e["t"] == "damage":
            return self.emit_damaged(e["kind"], e["n"])
        s = self.build(e)
        rows = [self.emit_session(s, self.rel_of(s), extra={"showcaseStep": e["idx"]} if e.get("showcase") else None)]
        for rel, data, row in s.extra_files:  # subagent children and transcripts
            rows.append(self.write_file(rel, data, dict(row)))
        return rows

    # -- main loop --------------------------------------------------------------------------------
    def run(self, n_sessions=None, n_bytes=None, jobs=1):
        """Runs the plan, in `jobs` processes, and returns the manifest rows. Results are taken in
        plan order, so the cut for n_bytes falls on the same task whatever `jobs` is; files that
        workers wrote ahead of the cut are deleted."""
        global _GEN
        _GEN = self
        pool = multiprocessing.get_context("fork").Pool(jobs) if jobs > 1 else None
        # tasks in flight: enough that one huge session does not hold up the other workers, but
        # near the end of --bytes, not much planned work beyond it (it would be thrown away)
        window = 64 * jobs if pool else 1
        tasks = self.plan(n_sessions, n_bytes)
        inflight = deque()
        inflight_est = 0
        rows, ahead = [], []
        total = 0
        sessions = 0
        dmg = Counter()
        stopped = exhausted = False
        try:
            while True:
                while not stopped and not exhausted and len(inflight) < window and \
                        (n_bytes is None or not inflight or total + inflight_est < n_bytes * 1.02):
                    e = next(tasks, None)
                    if e is None:
                        exhausted = True
                    else:
                        inflight.append((e, pool.apply_async(_run_task, (e,)) if pool else None))
                        inflight_est += e["est"]
                if not inflight:
                    break
                e, res = inflight.popleft()
                inflight_est -= e["est"]
                got = res.get() if pool else self.run_task(e)
                if stopped:
                    ahead.extend(got)
                    continue
                rows.extend(got)
                total += sum(r["bytes"] for r in got)
                if e["t"] == "damage":
                    dmg[e["kind"]] += 1
                else:
                    sessions += 1
                    if not self.P.small and sessions % 50 == 0:
                        sys.stderr.write("  %d sessions, %.1f MB\n" % (sessions, total / 1e6))
                if n_bytes is not None and total >= n_bytes and sessions >= len(SHOWCASE):
                    stopped = True
            # every damage kind at least once
            n = sum(dmg.values())
            missing = []
            for kind in DAMAGE_KINDS:
                if not dmg[kind]:
                    missing.append({"t": "damage", "kind": kind, "n": n})
                    n += 1
            if pool:
                for got in pool.map(_run_task, missing, chunksize=1):
                    rows.extend(got)
            else:
                for e in missing:
                    rows.extend(self.run_task(e))
        finally:
            if pool:
                pool.close()
                pool.join()
        for r in ahead:
            path = os.path.join(self.out, r["path"])
            os.remove(path)
            d = os.path.dirname(path)
            while os.path.abspath(d) != os.path.abspath(self.out) and not os.listdir(d):
                os.rmdir(d)
                d = os.path.dirname(d)
        return rows

    def manifest(self, args, rows):
        feats = Counter({name: 0 for name in FEATURE_CATALOGUE})
        kinds = Counter()
        expect = Counter()
        for r in rows:
            feats.update(r.get("features") or {})
            if r.get("damage"):
                feats["damage:" + r["damage"]] += 1
            kinds[r["kind"]] += 1
            expect[r["expect"]] += 1
        unknown = sorted(set(feats) - set(FEATURE_CATALOGUE))
        if unknown:
            raise AssertionError("feature counters missing from FEATURE_CATALOGUE: %s" % unknown)
        paths = Counter(r["path"] for r in rows)
        if len(paths) != len(rows):
            raise AssertionError("two files with one path: %s" % [p for p, n in paths.items() if n > 1])
        truth, sub_truth = self.truth(rows)
        sizes = sorted(r["bytes"] for r in rows if r["kind"] not in ("stray", "damaged", "artifact"))

        def pct(p):
            return sizes[min(len(sizes) - 1, int(p * len(sizes)))] if sizes else 0

        return {
            "generator": GENERATOR, "generatorVersion": GENERATOR_VERSION, "seed": args.seed, "scale": args.scale,
            "sessionsArg": args.sessions, "bytesArg": args.bytes, "sessionsRoot": SESSIONS_ROOT,
            "featureCatalogue": FEATURE_CATALOGUE,
            "totals": {"files": len(rows), "bytes": sum(r["bytes"] for r in rows), "lines": sum(r["lines"] for r in rows),
                       "sessionFiles": len(sizes), "byKind": dict(sorted(kinds.items())),
                       "byExpectedStatus": dict(sorted(expect.items())),
                       "sessionFileBytes": {"median": pct(0.5), "p90": pct(0.9), "p99": pct(0.99), "max": sizes[-1] if sizes else 0},
                       "features": dict(sorted(feats.items()))},
            "truth": truth,
            "subagentTruth": sub_truth,
            "files": sorted(rows, key=lambda r: r["path"]),
        }

    @staticmethod
    def truth(rows):
        """`truth`: the distinct billed calls a reader can count in the corpus (each row's `_calls`, merged
        by call id; see the README's "Truth"), and `subagentTruth`. Sets every row's `truthCalls` and
        takes the private `_calls` and `subagentRuns` out of the rows."""
        calls = {}
        for r in rows:
            lst = r.pop("_calls", None) or []
            for item in lst:
                v = tuple(item[1:])
                if calls.setdefault(item[0], v) != v:
                    raise AssertionError("call %s differs between copies" % item[0])
            r["truthCalls"] = len(lst)

        def tally(vs):
            vs = list(vs)
            return {"calls": len(vs), "input": sum(v[4] for v in vs), "output": sum(v[5] for v in vs),
                    "cacheRead": sum(v[6] for v in vs), "cacheWrite": sum(v[7] for v in vs),
                    "cost": math.fsum(v[8] for v in vs)}

        order = sorted(calls)
        truth = tally(calls[c] for c in order)
        truth["zeroUsageCalls"] = sum(1 for v in calls.values() if not any(v[4:]))
        by = {}
        for c in order:
            v = calls[c]
            by.setdefault(("assistant" if v[2] is not None else "toolResult") if v[0] == "message" else v[0], []).append(v)
        truth["bySource"] = {k: tally(by[k]) for k in sorted(by)}
        # what a reader matches copies by must not merge two distinct calls
        seen = {}
        for c in order:
            v = calls[c]
            seen.setdefault(("message",) + v[1:] if v[0] == "message" else ("entry", v[1]), []).append(c)
        truth["keyCollisions"] = [cs for cs in seen.values() if len(cs) > 1]
        if truth["keyCollisions"]:
            sys.stderr.write("warning: distinct calls that a reader cannot tell apart: %s\n" % truth["keyCollisions"][:5])

        parents, transcripts = {}, {}
        for r in sorted(rows, key=lambda r: r["path"]):
            for run in r.pop("subagentRuns", ()):
                p = parents.setdefault(r["path"], {"childSessions": [], "runs": []})
                p["runs"].append(run)
                for ch in run["children"]:
                    if ch["sessionWritten"]:
                        p["childSessions"].append(ch["sessionFile"])
                    if ch["transcriptWritten"]:
                        transcripts[ch["transcript"]] = {"runId": run["runId"], "agent": ch["agent"], "index": ch["index"],
                                                         "childSession": ch["sessionFile"],
                                                         "childSessionWritten": ch["sessionWritten"]}
        return truth, {"parents": parents, "transcripts": dict(sorted(transcripts.items()))}


_GEN = None  # the Generator that pool workers (forked from the main process) run tasks with


def _run_task(e):
    return _GEN.run_task(e)


DAMAGE_KINDS = Generator.DAMAGE_KINDS

# Every feature counter the generator can write (manifest `featureCatalogue`); the showcase makes
# each of them at least once in every corpus. manifest() refuses a counter that is not listed here.
FEATURE_CATALOGUE = sorted([
    "v1", "v1_branchedFrom", "v2", "v3", "v3_no_system",
    "system_initial", "system_late", "system_patch", "system_section_removed",
    "user_content_string", "user_image", "image", "long_gap",
    "assistant", "thinking", "thinking_redacted", "tool_call", "tool_result", "tool_result_error", "tool_result_usage",
    "provider_anthropic", "provider_openai", "provider_google", "provider_openrouter", "provider_xai", "provider_ollama", "provider_github-copilot",
    "model_change", "model_change_virtual", "thinking_level_change",
    "responseModel", "responseModel_same", "responseModel_virtual", "cost_total_from_provider", "cacheWrite1h",
    "stop_aborted", "stop_error", "stop_length", "zero_usage", "retry_after_error",
    "usage_cache_warm", "usage_unknown_kind", "usage_tiny_cost",
    "bashExecution", "bash_exclude_from_context", "custom", "custom_message", "hookMessage",
    "label", "label_cleared", "session_info", "session_info_cleared",
    "compaction", "compaction_v1_index", "compaction_system_message", "compaction_no_system_message",
    "compaction_usage", "compaction_no_usage", "compaction_first_kept_on_path", "compaction_keeps_older_compaction",
    "compaction_retain_none", "compaction_first_kept_off_path", "compaction_first_kept_missing",
    "branch", "branch_plain", "branch_summary", "branch_summary_usage", "new_root",
    "context_edit", "context_edit_null", "context_edit_string", "context_edit_string_normalized", "context_edit_array",
    "context_edit_same_target", "context_edit_off_path", "context_edit_abandoned", "context_edit_compacted_target",
    "context_edit_target_user", "context_edit_target_assistant", "context_edit_target_toolResult",
    "context_edit_target_custom_message", "context_edit_target_compaction",
    "fork_branched", "fork_forkFrom", "fork_forkFrom_cross_project", "fork_clone_no_parent", "fork_of_v1", "fork_of_v2",
    "fork_of_fork", "fork_parent_missing", "fork_rechained_after_label", "fork_label_recreated", "copied_entries",
    "showcase", "showcase_event",
    "subagent_call", "subagent_parallel", "subagent_old_style", "subagent_fork_child", "subagent_nested",
    "subagent_child_and_transcript", "subagent_transcript_deleted", "subagent_child_missing", "subagent_both_missing",
    "subagent_transcript", "subagent_child_compaction",
] + ["damage:" + k for k in DAMAGE_KINDS])


def _pi_parses(b):
    """Whether Pi's reader keeps this line as an entry: UTF-8 decoded with replacement characters, then
    JSON.parse of the line; an object (the lines checked here are entries or damage)."""
    try:
        v = json.loads(b.decode("utf-8", "replace").rstrip("\r"))
    except ValueError:
        return False
    return isinstance(v, dict)


def ms_from_iso(s):
    import calendar

    t = time.strptime(s[:19], "%Y-%m-%dT%H:%M:%S")
    return calendar.timegm(t) * 1000 + int(s[20:23])


def parse_size(s):
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)(i?)b?\s*", s.lower())
    if not m:
        raise argparse.ArgumentTypeError("bad size %r (examples: 1G, 200M, 1200M, 500K, 12345)" % s)
    num, unit, binary = float(m.group(1)), m.group(2), m.group(3)
    base = 1024 if binary else 1000
    return int(num * base ** " kmgt".index(unit or " "))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output directory (created; must be empty unless --force)")
    ap.add_argument("--seed", type=int, default=0)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--sessions", type=int, help="number of session files (forks included; damaged/stray files are extra)")
    g.add_argument("--bytes", type=parse_size, help="stop once this many bytes are written: 1G, 200M, 1200M, 500K (SI; 1GiB = binary)")
    ap.add_argument("--scale", choices=("small", "realistic"), default="realistic")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="worker processes (default: all cores); the output does not depend on it")
    ap.add_argument("--force", action="store_true", help="delete an existing output directory made by this generator first")
    args = ap.parse_args(argv)
    out = args.out
    if os.path.exists(out) and os.listdir(out):
        if not args.force:
            ap.error("%s is not empty (use --force to replace a directory this generator made)" % out)
        if not os.path.exists(os.path.join(out, "manifest.json")):
            ap.error("refusing to delete %s: it has no manifest.json from this generator" % out)
        shutil.rmtree(out)
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    gen = Generator(out, args.seed, args.scale)
    rows = gen.run(n_sessions=args.sessions, n_bytes=args.bytes, jobs=max(1, args.jobs))
    man = gen.manifest(args, rows)
    with open(os.path.join(out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(man, f, ensure_ascii=False, indent=1)
        f.write("\n")
    tot = man["totals"]
    sys.stderr.write("wrote %d files (%d session files), %.1f MB, %d lines in %.1fs -> %s\n" % (
        tot["files"], tot["sessionFiles"], tot["bytes"] / 1e6, tot["lines"], time.time() - t0, out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
