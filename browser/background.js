// handoff's extension (docs/browser.md): the active tab of the focused window is this device's
// current activity, and pages continued from the user's other devices open here. It talks only
// to handoff's native messaging host (handoff-browser-host), which speaks handoffd's local API.
//
// What it sends is what the browser's tabs API says of the user's own tabs: a page cannot send it
// anything (no content scripts, no message listeners for pages or other extensions). It never
// runs in private windows ("incognito": "not_allowed"), and checks that again for every tab.
"use strict";

const api = globalThis.browser ?? globalThis.chrome;
const HOST = "org.handoff.browser";
const BROWSER = navigator.userAgent.includes("Firefox/")
  ? "firefox"
  : (navigator.userAgentData?.brands ?? []).some((b) => b.brand === "Google Chrome") ? "chrome" : "chromium";

let port = null;
let hostState = { ready: false, reason: "starting" };
let retry = 500;
/** The last normal window the user focused: its active tab is the current activity. */
let focusedWindow = null;
/** What the host was last told of each window (so that nothing goes twice). */
const told = new Map();
/** Windows whose switch is off: nothing of them is handed over. Kept for the browser session. */
let off = new Set();
const dirty = new Set();
let flushing = false;
let nextRequest = 1;
const requests = new Map();

// MARK: The host

function connect() {
  port = api.runtime.connectNative(HOST);
  port.onMessage.addListener(fromHost);
  port.onDisconnect.addListener(() => {
    const error = api.runtime.lastError?.message ?? port?.error?.message;
    hostState = { ready: false, reason: error ? `handoff-browser-host: ${error}` : "handoff-browser-host stopped" };
    port = null;
    told.clear();
    for (const [, pending] of requests) pending({ type: "continued", error: hostState.reason });
    requests.clear();
    setTimeout(connect, retry);
    retry = Math.min(retry * 2, 30000);
  });
  post({ type: "hello", browser: BROWSER });
  told.clear();
  syncEverything();
}

/** Sends `message` to the host; false when there is none (it is told everything again on connecting). */
function post(message) {
  if (!port) return false;
  try {
    port.postMessage(message);
    return true;
  } catch (error) {
    console.warn("handoff: the host is gone", error);
    return false;
  }
}

async function fromHost(message) {
  switch (message?.type) {
    case "ready":
      hostState = { ready: true };
      retry = 500;
      break;
    case "offline":
      hostState = { ready: false, reason: String(message.reason) };
      break;
    case "save":
      await save(String(message.window), message.request);
      break;
    case "open":
      await open(message);
      break;
    case "offers":
    case "continued": {
      const pending = requests.get(message.request);
      requests.delete(message.request);
      pending?.(message);
      break;
    }
    case "refused":
      console.warn("handoff-browser-host refused a message:", message.reason);
      break;
  }
}

/** Asks the host; the answer is the message with the same request number. */
function ask(message) {
  if (!port) return Promise.resolve({ type: "continued", error: hostState.reason });
  const request = nextRequest++;
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      requests.delete(request);
      resolve({ type: "continued", error: "handoff did not answer in time" });
    }, 15000);
    requests.set(request, (answer) => {
      clearTimeout(timer);
      resolve(answer);
    });
    post({ ...message, request });
  });
}

// MARK: Originating

/** Whether `tab` of `window` may be shown to the user's other devices. */
function shareable(window, tab) {
  return (
    window?.type === "normal" &&
    !window.incognito &&
    !tab?.incognito &&
    !off.has(window.id) &&
    /^https?:\/\//i.test(tab?.url ?? "")
  );
}

function changed(windowId) {
  if (windowId === undefined || windowId === api.windows.WINDOW_ID_NONE) return;
  dirty.add(windowId);
  if (!flushing) flush();
}

/** Tells the host of every changed window, latest state only: a burst of tab switches is one message. */
async function flush() {
  flushing = true;
  try {
    while (dirty.size > 0) {
      const windows = [...dirty];
      dirty.clear();
      for (const windowId of windows) await tell(windowId);
    }
  } finally {
    flushing = false;
  }
}

async function tell(windowId) {
  let window, tab;
  try {
    window = await api.windows.get(windowId);
    [tab] = await api.tabs.query({ active: true, windowId });
  } catch {
    return; // closed meanwhile: onRemoved says so
  }
  const id = String(windowId);
  const message = shareable(window, tab)
    ? { type: "page", window: id, url: tab.url, title: tab.title ?? "", focused: windowId === focusedWindow }
    : { type: "clear", window: id };
  if (tab) badge(tab.id, window.id);
  const key = JSON.stringify(message);
  if (told.get(id) === key) return;
  if (post(message)) told.set(id, key);
}

function badge(tabId, windowId) {
  const text = off.has(windowId) ? "off" : "";
  api.action.setBadgeText({ tabId, text }).catch(() => {});
}

async function syncEverything() {
  try {
    const last = await api.windows.getLastFocused({ windowTypes: ["normal"] });
    if (!last.incognito) focusedWindow = last.id;
  } catch {
    // no window yet
  }
  for (const window of await api.windows.getAll({ windowTypes: ["normal"] })) changed(window.id);
}

/** Where the user is on the page: read in the page's isolated world, by this extension only. */
function readPosition() {
  const scroller = document.scrollingElement ?? document.documentElement;
  const range = Math.max(0, scroller.scrollHeight - window.innerHeight);
  let words = "";
  const top = document.elementFromPoint(window.innerWidth / 2, 8);
  if (top) {
    const text = (top.innerText ?? top.textContent ?? "").trim().split(/\n/)[0] ?? "";
    // By code points: a cut surrogate pair is not valid text, and the host would refuse it.
    words = Array.from(text.split(/\s+/).slice(0, 8).join(" ")).slice(0, 120).join("");
  }
  return {
    scrollX: Math.max(0, Math.round(window.scrollX)),
    scrollY: Math.max(0, Math.round(window.scrollY)),
    scrollFraction: range > 0 ? Math.min(1, Math.max(0, window.scrollY / range)) : 0,
    viewportWidth: Math.max(0, Math.round(window.innerWidth)),
    textFragment: words,
  };
}

async function save(id, request) {
  const windowId = Number(id);
  let window, tab;
  try {
    window = await api.windows.get(windowId);
    [tab] = await api.tabs.query({ active: true, windowId });
  } catch {
    return; // the host stops waiting by itself
  }
  if (!shareable(window, tab)) return;
  let position = { scrollX: 0, scrollY: 0, scrollFraction: 0, viewportWidth: 0, textFragment: "" };
  try {
    const [result] = await api.scripting.executeScript({ target: { tabId: tab.id }, func: readPosition });
    if (result?.result) position = result.result;
  } catch {
    // a page scripts may not run in (the browser's own, a PDF): the top of the page
  }
  post({ type: "saved", window: id, request, url: tab.url, title: tab.title ?? "", ...position });
}

// MARK: Receiving

function restorePosition(x, y, fraction, width) {
  const scroller = document.scrollingElement ?? document.documentElement;
  const range = Math.max(0, scroller.scrollHeight - window.innerHeight);
  // The same width lays the page out the same: the same pixels. Else the same share of it.
  const top = !width || Math.abs(width - window.innerWidth) <= 1 || fraction === 0 ? y : Math.round(fraction * range);
  window.scrollTo(x, top);
  return Math.round(window.scrollY);
}

async function targetWindow() {
  try {
    const last = await api.windows.getLastFocused({ windowTypes: ["normal"] });
    if (!last.incognito) return last;
  } catch {
    // none
  }
  return null;
}

function loaded(tabId, seconds) {
  return new Promise((resolve) => {
    const done = (ok) => {
      api.tabs.onUpdated.removeListener(listener);
      clearTimeout(timer);
      resolve(ok);
    };
    const listener = (updated, info) => {
      if (updated === tabId && info.status === "complete") done(true);
    };
    const timer = setTimeout(() => done(false), seconds * 1000);
    api.tabs.onUpdated.addListener(listener);
    api.tabs.get(tabId).then((tab) => tab.status === "complete" && tab.url !== "about:blank" && done(true), () => done(false));
  });
}

async function open(message) {
  const url = String(message.url ?? "");
  if (!/^https?:\/\//i.test(url)) {
    post({ type: "opened", id: message.id, error: "only http and https pages are opened" });
    return;
  }
  let tab, windowId;
  try {
    const window = await targetWindow();
    if (window) {
      tab = await api.tabs.create({ windowId: window.id, url, active: true });
      windowId = window.id;
      await api.windows.update(window.id, { focused: true }).catch(() => {});
    } else {
      const created = await api.windows.create({ url, focused: true });
      windowId = created.id;
      tab = created.tabs?.[0];
    }
  } catch (error) {
    post({ type: "opened", id: message.id, error: `the browser could not open the page: ${error?.message ?? error}` });
    return;
  }
  post({ type: "opened", id: message.id, window: String(windowId) });
  if (!tab || !(message.scrollY > 0 || message.scrollX > 0)) return;
  if (!(await loaded(tab.id, 30))) return;
  try {
    await api.scripting.executeScript({
      target: { tabId: tab.id },
      func: restorePosition,
      args: [message.scrollX | 0, message.scrollY | 0, Number(message.scrollFraction) || 0, message.viewportWidth | 0],
    });
  } catch (error) {
    console.warn("handoff: could not scroll the continued page", error);
  }
}

// MARK: The popup (the extension's own page only)

api.runtime.onMessage.addListener((message, sender, reply) => {
  // Only the extension's own pages (the popup, also when opened as a tab) ask this.
  if (sender.id !== api.runtime.id || !String(sender.url ?? "").startsWith(api.runtime.getURL(""))) return false;
  (async () => {
    switch (message?.popup) {
      case "state": {
        const window = await api.windows.get(message.window);
        return { host: hostState, sharing: !off.has(window.id), private: window.incognito };
      }
      case "switch":
        if (message.on) off.delete(message.window);
        else off.add(message.window);
        await api.storage.session.set({ off: [...off] });
        changed(message.window);
        return { sharing: !off.has(message.window) };
      case "offers":
        return await ask({ type: "offers" });
      case "continue":
        return await ask({ type: "continue", peer: String(message.peer) });
    }
    return null;
  })().then(reply, (error) => reply({ error: String(error?.message ?? error) }));
  return true;
});

// MARK: The browser's events

api.tabs.onActivated.addListener(({ windowId }) => changed(windowId));
api.tabs.onUpdated.addListener((tabId, info, tab) => {
  if (tab.active && (info.url !== undefined || info.title !== undefined || info.status === "complete")) changed(tab.windowId);
});
api.windows.onFocusChanged.addListener(async (windowId) => {
  // WINDOW_ID_NONE: another application has the focus; the page stays current, as it was.
  if (windowId === api.windows.WINDOW_ID_NONE) return;
  let window;
  try {
    window = await api.windows.get(windowId);
  } catch {
    return;
  }
  if (window.type !== "normal" || window.incognito) return;
  const before = focusedWindow;
  focusedWindow = windowId;
  if (before !== null && before !== windowId) changed(before);
  changed(windowId);
  // Back from another app (or another window): this window's page is current again — or, when it
  // shows nothing to hand over, nothing of this browser is.
  post({ type: "focus", window: String(windowId) });
});
api.windows.onRemoved.addListener((windowId) => {
  const id = String(windowId);
  off.delete(windowId);
  if (told.delete(id)) post({ type: "close", window: id });
  if (focusedWindow === windowId) focusedWindow = null;
});

api.storage.session
  .get("off")
  .then((stored) => (off = new Set(stored?.off ?? [])))
  .catch(() => {})
  .finally(connect);
