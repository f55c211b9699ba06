#!/usr/bin/python3
"""A person at a headless browser with handoff's extension, for the tests and benches
(docs/browser.md, "Tests"): `browser-driver.py chromium|firefox EXTENSION PORT`.
`browser-driver.py serve - PORT` only serves the articles (for a browser started otherwise).

Starts Debian's Chromium or Firefox ESR with the extension (the directory EXTENSION) loaded,
serves long test articles on 127.0.0.1:PORT, and reads one command per line on stdin. Chromium is
driven through its DevTools protocol on a pipe (--remote-debugging-pipe: no port to share inside
a simulated host); Firefox through Marionette, on the loopback port it picks and writes into its
profile (each simulated host has its own loopback). Tabs are named by the browser's own ids.

  open URL                 a new tab with URL, in the focused window, made active; prints "opened ID"
                           (Firefox's once the page has loaded, Chromium's at once)
  activate ID              makes tab ID the active one (a tab switch); prints "activated ID MS"
  scroll ID Y              scrolls tab ID to Y; prints "scrolled ID Y"
  close ID                 closes tab ID; prints "closed ID"
  private URL              opens URL in a private window; prints "private ID"
  wait-page URL SECONDS    waits for a tab showing URL (one no wait-page named before), loaded,
                           its scroll settled; prints
                           "page URL scrollY Y ms MS target ID" (MS: since the command) or
                           "no page URL"
  popup                    opens the extension's popup as a tab; prints "popup ID"
  click ID SELECTOR        clicks the first element matching SELECTOR in tab ID
  text ID                  prints "text ID " and the tab's visible text on one line
  eval ID EXPRESSION       evaluates the JavaScript EXPRESSION (an expression, not statements) in
                           tab ID; prints "eval " and its value as JSON
  quit

The browser's own output goes to ~/.config/browser-driver.log (or $XDG_CONFIG_HOME's). Only the
standard library: python3 as Debian ships it.
"""
import http.server
import json
import os
import select
import socket
import socketserver
import subprocess
import sys
import threading
import time

KIND, EXTENSION, PORT = sys.argv[1], sys.argv[2], int(sys.argv[3])
CONFIG = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
# Firefox's id for the extension: browser/manifest.json, browser_specific_settings.gecko.id.
GECKO_ID = "browser@handoff"


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


def log_file():
    os.makedirs(CONFIG, exist_ok=True)
    return open(os.path.join(CONFIG, "browser-driver.log"), "ab")


class Chromium:
    """Chromium through the DevTools protocol over its pipe: NUL-separated JSON on fds 3 and 4."""

    def __init__(self):
        profile = os.path.join(CONFIG, "chromium")
        os.makedirs(profile, exist_ok=True)
        to_browser_read, self.to_browser = os.pipe()
        self.from_browser, from_browser_write = os.pipe()

        def descriptors():
            os.dup2(to_browser_read, 3)
            os.dup2(from_browser_write, 4)

        log = log_file()
        self.process = subprocess.Popen(
            [
                os.environ.get("CHROMIUM", "/usr/bin/chromium"), "--headless", "--remote-debugging-pipe",
                f"--user-data-dir={profile}", f"--load-extension={EXTENSION}", f"--disable-extensions-except={EXTENSION}",
                "--no-first-run", "--no-default-browser-check", "--disable-gpu", "--password-store=basic",
                "--window-size=1200,900", "about:blank",
            ] + os.environ.get("CHROMIUM_FLAGS", "").split(),
            preexec_fn=descriptors, pass_fds=(3, 4), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.buffer = b""
        self.next = 0

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
            # Anything else is an event: none is needed.
        raise RuntimeError(f"{method}: no answer in {seconds} s")

    def receive(self, seconds=30):
        while b"\0" not in self.buffer:
            if not select.select([self.from_browser], [], [], seconds)[0]:
                raise RuntimeError(f"chromium said nothing in {seconds} s")
            data = os.read(self.from_browser, 1 << 16)
            if not data:
                raise SystemExit("chromium ended")
            self.buffer += data
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def targets(self, kind):
        return [t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == kind]

    def ready(self):
        """Whether the extension's service worker runs (once the browser has loaded it)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if any(t["url"].startswith("chrome-extension://") for t in self.targets("service_worker")):
                return True
            time.sleep(0.05)
        return False

    def evaluate(self, tab, expression):
        session = self.call("Target.attachToTarget", {"targetId": tab, "flatten": True})["sessionId"]
        try:
            result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, session=session)
            return result.get("result", {}).get("value")
        finally:
            self.call("Target.detachFromTarget", {"sessionId": session})

    def open(self, url):
        return self.call("Target.createTarget", {"url": url})["targetId"]

    def activate(self, tab):
        self.call("Target.activateTarget", {"targetId": tab})

    def close(self, tab):
        self.call("Target.closeTarget", {"targetId": tab})

    def private(self, url):
        context = self.call("Target.createBrowserContext")["browserContextId"]
        return self.call("Target.createTarget", {"url": url, "browserContextId": context, "newWindow": True})["targetId"]

    def pages(self):
        """(tab, url) of every tab."""
        return [(t["targetId"], t["url"]) for t in self.targets("page")]

    def popup(self):
        origin = self.targets("service_worker")[0]["url"].split("/")[2]
        return self.open(f"chrome-extension://{origin}/popup.html")

    def quit(self):
        self.process.terminate()


class Firefox:
    """Firefox through Marionette: a TCP connection carrying `LENGTH:JSON` messages; commands are
    [0, id, name, parameters], answers [1, id, error, result]."""

    def __init__(self):
        profile = os.path.join(CONFIG, "firefox-profile")
        os.makedirs(profile, exist_ok=True)
        port_file = os.path.join(profile, "MarionetteActivePort")
        if os.path.exists(port_file):
            os.remove(port_file)
        with open(os.path.join(profile, "user.js"), "w") as prefs:
            for name, value in {
                "marionette.port": 0,  # any free port, written to MarionetteActivePort
                "browser.shell.checkDefaultBrowser": False,
                "browser.startup.homepage_override.mstone": "ignore",
                "browser.aboutwelcome.enabled": False,
                "datareporting.policy.dataSubmissionEnabled": False,
                "toolkit.telemetry.reportingpolicy.firstRun": False,
                "app.update.disabledForTesting": True,
                "extensions.update.enabled": False,
                "browser.safebrowsing.update.enabled": False,
                "network.connectivity-service.enabled": False,
                "browser.tabs.warnOnClose": False,
            }.items():
                prefs.write(f"user_pref({json.dumps(name)}, {json.dumps(value)});\n")
        log = log_file()
        self.process = subprocess.Popen(
            [
                os.environ.get("FIREFOX", "/usr/bin/firefox-esr"), "--headless", "--marionette", "--remote-allow-system-access", "--no-remote",
                "--profile", profile, "--window-size=1200,900", "about:blank",
            ],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
        )
        try:
            self.connect(port_file)
        except BaseException:
            self.process.kill()
            raise

    def connect(self, port_file):
        deadline = time.monotonic() + 60
        port = None
        while port is None:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("firefox did not start Marionette")
            time.sleep(0.05)
            try:
                with open(port_file) as f:
                    port = int(f.read().strip())
            except (OSError, ValueError):  # not there yet, or being written
                pass
        self.socket = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.buffer = b""
        self.next = 0
        self.receive()  # the greeting: {"applicationType": "gecko", "marionetteProtocol": 3}
        self.call("WebDriver:NewSession", {"capabilities": {"alwaysMatch": {"pageLoadStrategy": "normal"}}})
        # The first window's first tab: new tabs open in its window, as they would from the
        # focused normal window (Marionette opens them in the window of the tab it acts on).
        self.home = self.current = self.call("WebDriver:GetWindowHandle")["value"]

    def call(self, name, params=None):
        self.next += 1
        message = json.dumps([0, self.next, name, params or {}]).encode()
        self.socket.sendall(str(len(message)).encode() + b":" + message)
        while True:
            answer = self.receive()
            if answer[0] == 1 and answer[1] == self.next:
                if answer[2]:
                    raise RuntimeError(f"{name}: {answer[2].get('error')}: {answer[2].get('message')}")
                return answer[3]

    def receive(self):
        while b":" not in self.buffer:
            self.read()
        length, rest = self.buffer.split(b":", 1)
        while len(rest) < int(length):
            self.read()
            length, rest = self.buffer.split(b":", 1)
        self.buffer = rest[int(length):]
        return json.loads(rest[: int(length)])

    def read(self):
        data = self.socket.recv(1 << 16)
        if not data:
            raise SystemExit("firefox ended")
        self.buffer += data

    def ready(self):
        """Installs the extension as a temporary add-on (as about:debugging does)."""
        return self.call("Addon:Install", {"path": EXTENSION, "temporary": True}).get("value") == GECKO_ID

    def to(self, tab, focus=False):
        """Marionette's commands act on one tab: this one, without selecting it unless `focus`."""
        if focus or self.current != tab:
            self.call("WebDriver:SwitchToWindow", {"handle": tab, "focus": focus})
            self.current = tab

    def evaluate(self, tab, expression):
        self.to(tab)
        return self.call("WebDriver:ExecuteScript", {"script": f"return ({expression});", "args": []}).get("value")

    def open(self, url):
        self.to(self.home)
        tab = self.call("WebDriver:NewWindow", {"type": "tab", "focus": True})["handle"]
        self.to(tab, focus=True)
        self.call("WebDriver:Navigate", {"url": url})
        return tab

    def activate(self, tab):
        self.to(tab, focus=True)

    def close(self, tab):
        self.to(tab)
        self.call("WebDriver:CloseWindow")
        self.current = None

    def private(self, url):
        self.to(self.home)
        tab = self.call("WebDriver:NewWindow", {"type": "window", "private": True, "focus": True})["handle"]
        self.to(tab, focus=True)
        self.call("WebDriver:Navigate", {"url": url})
        return tab

    def pages(self):
        found = []
        for tab in self.call("WebDriver:GetWindowHandles"):
            self.to(tab)
            found.append((tab, self.call("WebDriver:GetCurrentURL")["value"]))
        return found

    def popup(self):
        self.call("Marionette:SetContext", {"value": "chrome"})
        try:
            url = self.call("WebDriver:ExecuteScript", {
                "script": f"return WebExtensionPolicy.getByID({json.dumps(GECKO_ID)}).getURL('popup.html');", "args": [],
            })["value"]
        finally:
            self.call("Marionette:SetContext", {"value": "content"})
        return self.open(url)

    def quit(self):
        try:
            self.call("Marionette:Quit", {"flags": ["eForceQuit"]})
        except (OSError, SystemExit, RuntimeError):
            self.process.terminate()


def say(*words):
    print(*words, flush=True)


def main():
    server = Server(("127.0.0.1", PORT), Articles)
    if KIND == "serve":
        say("serving")
        server.serve_forever()
        return 0
    threading.Thread(target=server.serve_forever, daemon=True).start()
    browser = {"chromium": Chromium, "firefox": Firefox}[KIND]()
    try:
        if not browser.ready():
            say("no extension")
            return 1
        say("ready")
        commands(browser)
    finally:
        browser.quit()
        try:
            browser.process.wait(10)
        except subprocess.TimeoutExpired:
            browser.process.kill()
    return 0


def commands(browser):
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
                say("opened", browser.open(rest[0]))
            elif command == "activate":
                started = time.monotonic()
                browser.activate(rest[0])
                say("activated", rest[0], round((time.monotonic() - started) * 1000, 2))
            elif command == "close":
                browser.close(rest[0])
                say("closed", rest[0])
            elif command == "scroll":
                say("scrolled", rest[0], browser.evaluate(rest[0], f"(window.scrollTo(0, {int(rest[1])}), Math.round(window.scrollY))"))
            elif command == "private":
                say("private", browser.private(rest[0]))
            elif command == "wait-page":
                url, seconds = rest[0], float(rest[1])
                started = time.monotonic()
                found = None
                while time.monotonic() - started < seconds and found is None:
                    for tab, shown in browser.pages():
                        if shown == url and tab not in returned:
                            state = browser.evaluate(tab, "[document.readyState, Math.round(window.scrollY)]")
                            if state and state[0] == "complete":
                                found = (tab, state[1], time.monotonic())
                    if found is None:
                        time.sleep(0.01)
                if found is None:
                    say("no page", url)
                    continue
                opened_ms = round((found[2] - started) * 1000, 2)
                # The extension scrolls once the page has loaded: wait for the position to settle.
                tab, y = found[0], found[1]
                settle = time.monotonic() + 3
                while time.monotonic() < settle:
                    time.sleep(0.1)
                    now = browser.evaluate(tab, "Math.round(window.scrollY)")
                    if now == y and y > 0:
                        break
                    y = now
                returned.add(tab)
                say("page", url, "scrollY", y, "ms", opened_ms, "target", tab)
            elif command == "popup":
                say("popup", browser.popup())
            elif command == "click":
                selector = json.dumps(" ".join(rest[1:]))
                clicked = browser.evaluate(rest[0], f"(() => {{ const e = document.querySelector({selector}); if (!e) return false; e.click(); return true; }})()")
                say("clicked" if clicked else "nothing to click", rest[0])
            elif command == "eval":
                say("eval", json.dumps(browser.evaluate(rest[0], " ".join(rest[1:]))))
            elif command == "text":
                text = browser.evaluate(rest[0], "document.body.innerText") or ""
                say("text", rest[0], " ".join(text.split()))
            else:
                say("unknown command", command)
        except Exception as error:  # the test reads this line and fails with it
            say("error", command, error)


if __name__ == "__main__":
    sys.exit(main())
