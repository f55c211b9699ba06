// The toolbar popup (docs/browser.md): this window's switch, and what the other devices are
// doing — a click continues it here. It asks the background page, which asks the host.
"use strict";

const api = globalThis.browser ?? globalThis.chrome;
const ask = (message) => api.runtime.sendMessage(message);

function line(text, className = "quiet") {
  const item = document.createElement("li");
  item.className = className;
  item.textContent = text;
  return item;
}

async function show() {
  const current = await api.windows.getCurrent();
  const sharing = document.getElementById("sharing");
  const status = document.getElementById("status");
  const state = await ask({ popup: "state", window: current.id });
  const off = document.getElementById("off");
  sharing.checked = state.sharing && !state.private;
  sharing.disabled = state.private;
  off.hidden = sharing.checked || state.private;
  if (state.private) status.textContent = "Private windows are never handed over.";
  else if (!state.host.ready) status.textContent = `Not connected: ${state.host.reason}`;
  sharing.onchange = async () => {
    const reply = await ask({ popup: "switch", window: current.id, on: sharing.checked });
    // No answer (the background failed): the switch is as it was.
    sharing.checked = reply?.sharing ?? !sharing.checked;
    off.hidden = sharing.checked;
  };

  const list = document.getElementById("offers");
  const answer = await ask({ popup: "offers" });
  list.replaceChildren();
  if (answer?.error) {
    list.append(line(answer.error));
    return;
  }
  if (!answer?.offers?.length) {
    list.append(line("Nothing to continue right now."));
    return;
  }
  for (const offer of answer.offers) {
    const button = document.createElement("button");
    button.textContent = offer.title || offer.type;
    const device = document.createElement("span");
    device.className = "device";
    device.textContent = `${offer.device} · opens in ${offer.target}`;
    button.append(device);
    button.onclick = async () => {
      button.disabled = true;
      const result = await ask({ popup: "continue", peer: offer.peer });
      if (result?.error) {
        status.textContent = result.error;
        button.disabled = false;
      } else {
        globalThis.close();
      }
    };
    const item = document.createElement("li");
    item.append(button);
    list.append(item);
  }
}

show().catch((error) => {
  document.getElementById("status").textContent = String(error?.message ?? error);
});
