#!/usr/bin/python3
"""A person at a headless Chromium with handoff's extension, for the tests and benches
(docs/browser.md, "Tests"). Starts Chromium (Debian's) with the extension loaded and its
DevTools protocol on a pipe (--remote-debugging-pipe: no port to share inside a simulated
host), serves long test articles on 127.0.0.1:PORT, and reads one command per line on stdin:

  open URL                 a new tab with URL, in the focused window; prints "opened ID"
  activate ID              makes tab ID the active one (a tab switch); prints "activated ID MS"
  scroll ID Y              scrolls tab ID to Y; prints "scrolled ID Y"
  close ID                 closes tab ID; prints "closed ID"
  private URL              opens URL in a private (off-the-record) window; prints "private ID"
  wait-page URL SECONDS    waits for a tab showing URL (one no wait-page named before), loaded,
                           its scroll settled; prints
                           "page URL scrollY Y ms MS" (MS: since the command) or "no page URL"
  popup                    opens the extension's popup as a tab; prints "popup ID"
  click ID SELECTOR        clicks the first element matching SELECTOR in tab ID
  text ID                  prints "text ID " and the tab's visible text on one line
  eval ID EXPRESSION       evaluates EXPRESSION in tab ID; prints "eval " and its value as JSON
  worker EXPRESSION        evaluates EXPRESSION in the extension's service worker; prints
                           "worker " and its value as JSON
  quit

Only the standard library: python3 as Debian ships it.
"""
import http.server
import json
import os
import socketserver
import subprocess
import sys
import threading
import time

EXTENSION, PORT = sys.argv[1], int(sys.argv[2])
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
PROFILE = os.path.join(os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"), "chromium")


class Articles(http.server.BaseHTTPRequestHandler):
    """/article/NAME: a long page titled NAME, 400 numbered paragraphs."""

    def do_GET(self):
        name = self.path.rsplit("/", 1)[-1] or "index"
        paragraphs = "".join(
            f"<p id=p{i}>Paragraph {i} of {name}: the quick brown fox jumps over the lazy dog.</p>" for i in range(400)
        )
        body = f"<!doctype html><title>{name}</title><h1>{name}</h1>{paragraphs}".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class DevTools:
    """The DevTools protocol over Chromium's pipe: NUL-separated JSON messages on fds 3 and 4."""

    def __init__(self, arguments):
        to_browser_read, self.to_browser = os.pipe()
        self.from_browser, from_browser_write = os.pipe()

        def descriptors():
            os.dup2(to_browser_read, 3)
            os.dup2(from_browser_write, 4)

        self.log = open(os.path.join(PROFILE, "..", "chromium-driver.log"), "ab")
        self.process = subprocess.Popen(
            arguments, preexec_fn=descriptors, pass_fds=(3, 4), stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.buffer = b""
        self.next = 0
        self.events = []

    def call(self, method, params=None, session=None, seconds=30):
        self.next += 1
        message = {"id": self.next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            answer = self.receive()
            if answer.get("id") == self.next:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)
            del self.events[:-200]
        raise RuntimeError(f"{method}: no answer in {seconds} s")

    def receive(self):
        while b"\0" not in self.buffer:
            data = os.read(self.from_browser, 1 << 16)
            if not data:
                raise SystemExit("chromium ended")
            self.buffer += data
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def evaluate(self, target, expression):
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        try:
            result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, session=session)
            return result.get("result", {}).get("value")
        finally:
            self.call("Target.detachFromTarget", {"sessionId": session})

    def pages(self):
        return [t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page"]


def say(*words):
    print(*words, flush=True)


def main():
    os.makedirs(PROFILE, exist_ok=True)
    server = Server(("127.0.0.1", PORT), Articles)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    browser = DevTools([
        CHROMIUM, "--headless", "--remote-debugging-pipe", f"--user-data-dir={PROFILE}",
        f"--load-extension={EXTENSION}", f"--disable-extensions-except={EXTENSION}",
        "--no-first-run", "--no-default-browser-check", "--disable-gpu", "--password-store=basic",
        "--window-size=1200,900", "about:blank",
    ] + os.environ.get("CHROMIUM_FLAGS", "").split())
    # The extension's service worker runs once the browser has loaded it.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        targets = browser.call("Target.getTargets")["targetInfos"]
        if any(t["type"] == "service_worker" and t["url"].startswith("chrome-extension://") for t in targets):
            break
        time.sleep(0.05)
    else:
        say("no extension")
        return 1
    say("ready")
    returned = set()  # tabs wait-page has named: each names a tab once
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        command, rest = words[0], words[1:]
        try:
            if command == "quit":
                break
            elif command == "open":
                target = browser.call("Target.createTarget", {"url": rest[0]})["targetId"]
                say("opened", target)
            elif command == "activate":
                started = time.monotonic()
                browser.call("Target.activateTarget", {"targetId": rest[0]})
                say("activated", rest[0], round((time.monotonic() - started) * 1000, 2))
            elif command == "close":
                browser.call("Target.closeTarget", {"targetId": rest[0]})
                say("closed", rest[0])
            elif command == "scroll":
                y = browser.evaluate(rest[0], f"window.scrollTo(0, {int(rest[1])}); Math.round(window.scrollY)")
                say("scrolled", rest[0], y)
            elif command == "private":
                context = browser.call("Target.createBrowserContext")["browserContextId"]
                target = browser.call("Target.createTarget", {"url": rest[0], "browserContextId": context, "newWindow": True})["targetId"]
                say("private", target)
            elif command == "wait-page":
                url, seconds = rest[0], float(rest[1])
                started = time.monotonic()
                found = None
                while time.monotonic() - started < seconds and found is None:
                    for page in browser.pages():
                        if page["url"] == url and page["targetId"] not in returned:
                            state = browser.evaluate(page["targetId"], "[document.readyState, Math.round(window.scrollY)]")
                            if state and state[0] == "complete":
                                found = (page["targetId"], state[1], time.monotonic())
                    if found is None:
                        time.sleep(0.01)
                if found is None:
                    say("no page", url)
                    continue
                opened_ms = round((found[2] - started) * 1000, 2)
                # The extension scrolls once the page has loaded: wait for the position to settle.
                target, y = found[0], found[1]
                settle = time.monotonic() + 3
                while time.monotonic() < settle:
                    time.sleep(0.1)
                    now = browser.evaluate(target, "Math.round(window.scrollY)")
                    if now == y and y > 0:
                        break
                    y = now
                returned.add(target)
                say("page", url, "scrollY", y, "ms", opened_ms, "target", target)
            elif command == "popup":
                workers = [t for t in browser.call("Target.getTargets")["targetInfos"] if t["type"] == "service_worker"]
                origin = workers[0]["url"].split("/")[2]
                target = browser.call("Target.createTarget", {"url": f"chrome-extension://{origin}/popup.html"})["targetId"]
                say("popup", target)
            elif command == "click":
                selector = json.dumps(" ".join(rest[1:]))
                clicked = browser.evaluate(rest[0], f"(() => {{ const e = document.querySelector({selector}); if (!e) return false; e.click(); return true; }})()")
                say("clicked" if clicked else "nothing to click", rest[0])
            elif command == "worker":
                workers = [t for t in browser.call("Target.getTargets")["targetInfos"] if t["type"] == "service_worker"]
                value = browser.evaluate(workers[0]["targetId"], " ".join(rest))
                say("worker", json.dumps(value))
            elif command == "eval":
                say("eval", json.dumps(browser.evaluate(rest[0], " ".join(rest[1:]))))
            elif command == "text":
                text = browser.evaluate(rest[0], "document.body.innerText") or ""
                say("text", rest[0], " ".join(text.split()))
            else:
                say("unknown command", command)
        except Exception as error:  # the test reads this line and fails with it
            say("error", command, error)
    browser.process.terminate()
    try:
        browser.process.wait(10)
    except subprocess.TimeoutExpired:
        browser.process.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
