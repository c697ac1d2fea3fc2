"""Open a pisa HTML report in headless Chromium and say what the browser saw, as JSON.

    python3 browser.py CHROMIUM PAGE.html OUT_DIR NAME [--clip HEIGHT]

Drives the browser through the DevTools protocol over a pipe (--remote-debugging-pipe: fds 3
and 4, messages ended by NUL), so it needs the standard library only and no port. Prints one
JSON object: the console errors and uncaught exceptions, every request the page made, each
chart's box and drawn shapes, the totals the page shows (data-total), whether sorting a table
works, the page's background in light and dark mode, and the body text. Writes
OUT_DIR/NAME.png (the whole page, light), OUT_DIR/NAME-dark.png, and with --clip the top
HEIGHT pixels as OUT_DIR/NAME-top.png (the README figure).
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

TIMEOUT = 60


class Browser:
    def __init__(self, chromium):
        self.profile = tempfile.TemporaryDirectory(prefix="pisa-chromium-")
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()

        def fds():
            # The protocol's pipes must be the child's fds 3 and 4. Copies first: a pipe may
            # already sit at 3 or 4, and dup2 onto itself would keep its close-on-exec flag.
            r, w = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        args = [chromium, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--hide-scrollbars", "--force-color-profile=srgb",
                f"--user-data-dir={self.profile.name}", "about:blank"]
        self.proc = subprocess.Popen(args, preexec_fn=fds, pass_fds=(3, 4), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None

    def _read_message(self):
        while b"\0" not in self.buf:
            chunk = os.read(self.from_child, 1 << 16)
            if not chunk:
                raise RuntimeError("the browser closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + TIMEOUT
        while time.time() < deadline:
            m = self._read_message()
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)
        raise TimeoutError(method)

    def wait_for(self, method):
        deadline = time.time() + TIMEOUT
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        while time.time() < deadline:
            m = self._read_message()
            if m.get("method") == method:
                return m
            self.events.append(m)
        raise TimeoutError(method)

    def evaluate(self, expression):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(json.dumps(r["exceptionDetails"]))
        return r["result"].get("value")

    def close(self):
        try:
            self.call("Browser.close", session=False)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.profile.cleanup()


PROBE = r"""
(() => {
  const charts = Array.from(document.querySelectorAll("svg.chart")).map((svg) => {
    const box = svg.getBoundingClientRect();
    const shapes = Array.from(svg.querySelectorAll("rect:not(.hit), path, circle"))
      .filter((e) => { const b = e.getBoundingClientRect(); return b.width > 0 && b.height > 0; });
    return { id: svg.id, width: box.width, height: box.height, shapes: shapes.length,
             title: svg.querySelector("title")?.textContent ?? "",
             labelledby: svg.getAttribute("aria-labelledby"),
             desc: svg.querySelector("desc")?.textContent ?? "",
             texts: svg.querySelectorAll("text").length,
             tips: svg.querySelectorAll("g > title, circle > title").length };
  });
  const totals = {};
  for (const td of document.querySelectorAll("[data-total]")) totals[td.dataset.total] = Number(td.dataset.v);
  // Sorting: click the cost heading of the project table twice, the order must flip.
  const table = document.querySelector("#projects table.sortable");
  let sorted = null;
  if (table) {
    const th = table.tHead.rows[0].cells[1];
    const values = () => Array.from(table.tBodies[0].rows).map((r) => Number(r.cells[1].dataset.v));
    th.querySelector("button").click();
    const up = values();
    th.querySelector("button").click();
    const down = values();
    sorted = { ascending: up.every((v, i) => i === 0 || up[i - 1] <= v),
               descending: down.every((v, i) => i === 0 || down[i - 1] >= v),
               rows: up.length, aria: th.getAttribute("aria-sort") };
  }
  return { charts, totals, sorted,
           figures: document.querySelectorAll("figure").length,
           captions: document.querySelectorAll("figcaption").length,
           tables: document.querySelectorAll("table").length,
           scripts: document.querySelectorAll("script").length,
           images: document.querySelectorAll("img, iframe, object, embed").length,
           pwned: window.__pwned ?? null,
           background: getComputedStyle(document.body).backgroundColor,
           height: document.documentElement.scrollHeight,
           text: document.body.textContent };
})()
"""


def screenshot(b, path, height, width=1100, clip=False):
    b.call("Emulation.setDeviceMetricsOverride",
           {"width": width, "height": int(height), "deviceScaleFactor": 1, "mobile": False})
    params = {"format": "png", "captureBeyondViewport": not clip}
    if clip:
        params["clip"] = {"x": 0, "y": 0, "width": width, "height": int(height), "scale": 1}
    shot = b.call("Page.captureScreenshot", params)
    with open(path, "wb") as f:
        f.write(base64.b64decode(shot["data"]))


def scheme(b, dark):
    b.call("Emulation.setEmulatedMedia",
           {"features": [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]})


def main():
    chromium, page, out_dir, name = sys.argv[1:5]
    clip = int(sys.argv[6]) if len(sys.argv) > 6 and sys.argv[5] == "--clip" else None
    os.makedirs(out_dir, exist_ok=True)
    b = Browser(chromium)
    try:
        target = b.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        b.session = b.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            b.call(f"{domain}.enable")
        b.call("Emulation.setDeviceMetricsOverride",
               {"width": 1100, "height": 900, "deviceScaleFactor": 1, "mobile": False})
        scheme(b, False)
        b.call("Page.navigate", {"url": "file://" + os.path.abspath(page)})
        b.wait_for("Page.loadEventFired")
        seen = b.evaluate(PROBE)
        if clip:
            screenshot(b, os.path.join(out_dir, f"{name}-top.png"), clip, clip=True)
        screenshot(b, os.path.join(out_dir, f"{name}.png"), seen["height"])
        scheme(b, True)
        seen["dark_background"] = b.evaluate("getComputedStyle(document.body).backgroundColor")
        screenshot(b, os.path.join(out_dir, f"{name}-dark.png"), seen["height"])
        b.evaluate("1")  # let late events arrive
    finally:
        b.close()
    events = b.events
    seen["console"] = [e["params"]["args"][0].get("value", "") if e["params"]["args"] else ""
                       for e in events if e.get("method") == "Runtime.consoleAPICalled"
                       and e["params"]["type"] in ("error", "assert", "warning")]
    seen["console"] += [e["params"]["entry"]["text"] for e in events
                        if e.get("method") == "Log.entryAdded"
                        and e["params"]["entry"]["level"] in ("error", "warning")]
    seen["exceptions"] = [e["params"]["exceptionDetails"].get("text", "") for e in events
                          if e.get("method") == "Runtime.exceptionThrown"]
    seen["requests"] = [e["params"]["request"]["url"] for e in events
                        if e.get("method") == "Network.requestWillBeSent"]
    json.dump(seen, sys.stdout)


if __name__ == "__main__":
    main()
