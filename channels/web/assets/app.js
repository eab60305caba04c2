// switchboard web page. No build step, no dependencies.
//
// Trust rule: every string from the server is inserted with textContent,
// except two fields the server produced with channels.Render (which escapes
// all literal text and keeps only safe links): a text part's `html` and a
// tool part's `title_html`. Those two, and only those, use innerHTML. The
// Content-Security-Policy forbids inline script as a second line of defence.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  };

  // The gateway's command table replaces this list (GET /api/state) once it
  // registered one; until then the page offers these.
  let COMMANDS = [
    ["/new", "start a new conversation"],
    ["/stop", "stop the running turn"],
    ["/status", "agent, model, queue, approvals"],
    ["/approve", "approve the pending ask"],
    ["/deny", "deny the pending ask [reason]"],
    ["/compact", "summarize older context"],
    ["/memory", "memory log and diff"],
    ["/queue", "how new messages queue"],
    ["/mode", "permission mode (admins)"],
    ["/model", "switch model (admins)"],
    ["/help", "all commands"],
  ];
  const STATUS_ICON = { pending: "⏳", running: "⚙", done: "✓", error: "✗", denied: "⛔", unknown: "⚠" };
  const PLAN_ICON = { pending: "☐", in_progress: "◐", completed: "☑" };

  const state = {
    chat: null,
    events: null,
    listed: new Map(), // chat id -> title, from the sidebar list
    files: [],
    typingTimer: 0,
  };

  // ---------- API ----------

  async function api(method, path, body) {
    const opts = { method, credentials: "same-origin", headers: { "X-Switchboard": "1" } };
    if (body instanceof FormData) {
      opts.body = body;
    } else if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const res = await fetch(path, opts);
    if (res.status === 401) {
      location.reload(); // the session is gone: show the login form
      throw new Error("not logged in");
    }
    let data = {};
    try {
      data = await res.json();
    } catch (_) {
      /* empty body */
    }
    if (!res.ok) {
      const err = new Error(data.error || res.statusText);
      err.status = res.status;
      throw err;
    }
    return data;
  }

  function randomID() {
    if (crypto.randomUUID) return crypto.randomUUID();
    const b = crypto.getRandomValues(new Uint8Array(16)); // plain http on a LAN address has no randomUUID
    return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  }

  // ---------- toasts and banner ----------

  function toast(text, kind) {
    const t = el("div", "toast " + (kind || ""), text);
    t.setAttribute("role", kind === "alert" ? "alert" : "status");
    $("toasts").append(t);
    if (kind === "alert") {
      const close = el("button", "link", "OK");
      close.type = "button";
      close.addEventListener("click", () => t.remove());
      t.append(close);
    } else {
      setTimeout(() => t.remove(), kind === "error" ? 8000 : 4000);
    }
  }

  function setNotice(text) {
    const n = $("notice");
    n.textContent = text || "";
    n.hidden = !text;
  }

  // ---------- messages ----------

  const messages = $("messages");

  function nearBottom() {
    return messages.scrollHeight - messages.scrollTop - messages.clientHeight < 80;
  }

  function scrollDown(force) {
    if (force || nearBottom()) messages.scrollTop = messages.scrollHeight;
  }

  function renderPart(p, view) {
    switch (p.type) {
      case "text": {
        const d = el("div", "text");
        d.innerHTML = p.html; // trusted: channels.Render output (escaped, safe links only)
        for (const a of d.querySelectorAll("a")) a.target = "_blank";
        return d;
      }
      case "plaintext":
        return el("div", "text plain", p.text);
      case "reasoning": {
        const d = el("details", "reasoning");
        d.append(el("summary", "", "Thinking"), el("pre", "", p.text));
        return d;
      }
      case "tool": {
        const d = el("div", "tool status-" + (p.status || "pending"));
        d.append(el("span", "tool-icon", STATUS_ICON[p.status] || "⚙"));
        const title = el("span", "tool-title");
        title.innerHTML = p.title_html; // trusted: channels.Render output
        d.append(title, el("span", "tool-status", p.status || ""));
        if (p.diff) {
          const det = el("details", "diff");
          det.append(el("summary", "", "diff"));
          const pre = el("pre");
          for (const line of p.diff.split("\n")) {
            let cls = "";
            if (line.startsWith("+") && !line.startsWith("+++")) cls = "add";
            else if (line.startsWith("-") && !line.startsWith("---")) cls = "del";
            else if (line.startsWith("@@")) cls = "hunk";
            pre.append(el("span", cls, line + "\n"));
          }
          det.append(pre);
          d.append(det);
        }
        return d;
      }
      case "plan": {
        const ul = el("ul", "plan");
        for (const it of p.items || []) {
          const li = el("li", "plan-" + it.status);
          li.append(el("span", "plan-icon", PLAN_ICON[it.status] || "☐"), el("span", "", it.content));
          ul.append(li);
        }
        return ul;
      }
      case "buttons": {
        const d = el("div", "buttons");
        for (const row of p.rows || []) {
          const r = el("div", "button-row");
          for (const b of row) {
            const btn = el("button", b.style || "", b.label);
            btn.type = "button";
            btn.disabled = !!view.pressed;
            btn.addEventListener("click", () => press(view.id, b.token, btn));
            r.append(btn);
          }
          d.append(r);
        }
        return d;
      }
      case "attachment": {
        const f = p.file;
        const d = el("div", "attachment");
        if (f.image) {
          const img = el("img");
          img.src = f.url;
          img.alt = f.name;
          img.loading = "lazy";
          d.append(img);
        }
        const a = el("a", "download", "⤓ " + f.name);
        a.href = f.url;
        a.download = f.name;
        d.append(a);
        if (f.caption) d.append(el("div", "caption", f.caption));
        return d;
      }
      case "notice":
        return el("div", "notice-line", p.text);
    }
    return el("div", "unknown", "");
  }

  function renderMessage(view, live) {
    const m = el("article", "msg role-" + view.role);
    m.dataset.id = view.id;
    if (live) m.dataset.live = "1";
    if (view.ephemeral) m.classList.add("ephemeral");
    if (view.pending) m.classList.add("pending");
    const bubble = el("div", "bubble");
    for (const p of view.parts || []) bubble.append(renderPart(p, view));
    m.append(bubble);
    const meta = el("div", "meta");
    if (view.ephemeral) meta.append(el("span", "", "only you can see this · "));
    const at = view.at ? new Date(view.at) : new Date();
    meta.append(el("time", "", at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })));
    m.append(meta);
    return m;
  }

  function findMsg(id) {
    for (const m of messages.querySelectorAll("article.msg")) if (m.dataset.id === id) return m;
    return null;
  }

  function upsert(view, live) {
    const follow = nearBottom();
    $("empty").hidden = true;
    const fresh = renderMessage(view, live);
    const old = findMsg(view.id);
    if (old) old.replaceWith(fresh);
    else messages.append(fresh);
    if (view.role !== "user") hideTyping();
    scrollDown(follow);
  }

  function removeMsg(id) {
    const m = findMsg(id);
    if (m) m.remove();
  }

  function showTyping() {
    $("typing").hidden = false;
    clearTimeout(state.typingTimer);
    state.typingTimer = setTimeout(hideTyping, 8000);
  }

  function hideTyping() {
    clearTimeout(state.typingTimer);
    $("typing").hidden = true;
  }

  // ---------- chats ----------

  async function loadChats() {
    let data;
    try {
      data = await api("GET", "/api/chats");
    } catch (e) {
      toast("Could not list conversations: " + e.message, "error");
      return;
    }
    const nav = $("chat-list");
    nav.replaceChildren();
    state.listed.clear();
    const chats = data.chats || [];
    if (state.chat && !chats.some((c) => c.id === state.chat)) {
      chats.unshift({ id: state.chat, title: $("chat-title").textContent, current: true });
    }
    for (const c of chats) {
      state.listed.set(c.id, c.title || "");
      if (c.id === state.chat && c.title) $("chat-title").textContent = c.title;
      const b = el("button", "chat-item" + (c.id === state.chat ? " active" : ""));
      b.type = "button";
      b.dataset.id = c.id;
      b.append(el("span", "chat-title", c.title || "Untitled"));
      const sub = [c.agent, c.updated_at ? new Date(c.updated_at).toLocaleString() : ""].filter(Boolean).join(" · ");
      if (sub) b.append(el("span", "chat-sub", sub));
      b.addEventListener("click", () => {
        closeSidebar();
        openChat(c.id, true);
      });
      nav.append(b);
    }
  }

  async function newChat() {
    closeSidebar();
    try {
      const { id } = await api("POST", "/api/chats");
      await openChat(id, false);
      loadChats();
    } catch (e) {
      toast("Could not start a chat: " + e.message, "error");
    }
  }

  async function openChat(id, listed) {
    if (state.events) state.events.close();
    state.chat = id;
    history.replaceState(null, "", "#" + encodeURIComponent(id));
    for (const b of document.querySelectorAll(".chat-item")) b.classList.toggle("active", b.dataset.id === id);
    $("chat-title").textContent = state.listed.get(id) || "New chat";
    for (const m of messages.querySelectorAll("article.msg, .history-error")) m.remove();
    $("empty").hidden = false;
    hideTyping();
    try {
      const h = await api("GET", `/api/chats/${encodeURIComponent(id)}/history`);
      if (state.chat !== id) return;
      if (h.error && listed) messages.append(el("p", "history-error", "History unavailable: " + h.error));
      for (const v of h.items || []) upsert(v, false);
    } catch (e) {
      if (e.status !== 401) toast("Could not load history: " + e.message, "error");
    }
    if (state.chat !== id) return;
    subscribe(id);
    scrollDown(true);
    $("input").focus();
  }

  function subscribe(id) {
    const es = new EventSource(`/api/chats/${encodeURIComponent(id)}/events`);
    state.events = es;
    const on = (name, fn) =>
      es.addEventListener(name, (ev) => {
        if (state.events === es) fn(JSON.parse(ev.data));
      });
    on("reset", () => {
      for (const m of messages.querySelectorAll("article.msg[data-live]")) m.remove();
    });
    on("message", (v) => upsert(v, true));
    on("delete", (v) => removeMsg(v.id));
    on("typing", showTyping);
    on("notice", (v) => setNotice(v.text));
    es.addEventListener("error", () => {
      // EventSource reconnects by itself with Last-Event-ID; a lost session
      // shows up as a failed reconnect, which /api/state detects.
      if (es.readyState === EventSource.CLOSED) api("GET", "/api/state").catch(() => {});
    });
  }

  // ---------- sending ----------

  async function send() {
    const input = $("input");
    const text = input.value;
    const files = state.files;
    if (!text.trim() && files.length === 0) return;
    if (!state.chat) await newChat();
    const chat = state.chat;
    const id = randomID();
    input.value = "";
    state.files = [];
    renderPendingFiles();
    autoGrow();
    hideHint();
    upsert({ id: "u-" + id, role: "user", pending: true, parts: [{ type: "plaintext", text }] }, true);
    scrollDown(true);
    let body = { id, text };
    if (files.length) {
      body = new FormData();
      body.append("id", id);
      body.append("text", text);
      for (const f of files) body.append("file", f, f.name);
    }
    const path = `/api/chats/${encodeURIComponent(chat)}/messages`;
    for (let attempt = 0; ; attempt++) {
      try {
        await api("POST", path, body); // the same id on a retry: the gateway dedupes
        break;
      } catch (e) {
        if (e.status === undefined && attempt < 2) continue; // network error: try again
        removeMsg("u-" + id);
        if (!input.value) input.value = text;
        autoGrow();
        toast("Not sent: " + e.message, "error");
        return;
      }
    }
    if (!state.listed.has(chat) || !state.listed.get(chat)) loadChats();
  }

  async function press(messageID, token, btn) {
    const article = btn.closest("article");
    for (const b of article.querySelectorAll(".buttons button")) b.disabled = true;
    btn.classList.add("pressed");
    try {
      const r = await api("POST", "/api/actions", { token, chat: state.chat, message: messageID });
      if (r.text) toast(r.text, r.alert ? "alert" : "");
    } catch (e) {
      for (const b of article.querySelectorAll(".buttons button")) b.disabled = false;
      btn.classList.remove("pressed");
      toast(e.message, "error");
    }
  }

  // ---------- composer ----------

  function autoGrow() {
    const t = $("input");
    t.style.height = "auto";
    t.style.height = Math.min(t.scrollHeight, 240) + "px";
  }

  function hideHint() {
    $("cmd-hint").hidden = true;
  }

  function updateHint() {
    const v = $("input").value;
    const hint = $("cmd-hint");
    if (!v.startsWith("/") || /\s/.test(v)) return hideHint();
    const matches = COMMANDS.filter(([c]) => c.startsWith(v));
    if (!matches.length) return hideHint();
    hint.replaceChildren();
    for (const [cmd, desc] of matches) {
      const li = el("li");
      const b = el("button", "link");
      b.type = "button";
      b.append(el("code", "", cmd), el("span", "", " " + desc));
      b.addEventListener("click", () => {
        $("input").value = cmd + " ";
        hideHint();
        $("input").focus();
      });
      li.append(b);
      hint.append(li);
    }
    hint.hidden = false;
  }

  function renderPendingFiles() {
    const box = $("pending-files");
    box.replaceChildren();
    state.files.forEach((f, i) => {
      const chip = el("span", "file-chip", f.name);
      const x = el("button", "link", "×");
      x.type = "button";
      x.setAttribute("aria-label", "Remove " + f.name);
      x.addEventListener("click", () => {
        state.files.splice(i, 1);
        renderPendingFiles();
      });
      chip.append(x);
      box.append(chip);
    });
  }

  // ---------- sidebar on small screens ----------

  function closeSidebar() {
    document.body.classList.remove("sidebar-open");
    $("scrim").hidden = true;
  }

  // ---------- start ----------

  async function start() {
    $("composer").addEventListener("submit", (e) => {
      e.preventDefault();
      send();
    });
    $("input").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        send();
      } else if (e.key === "Escape") {
        hideHint();
      }
    });
    $("input").addEventListener("keypress", (e) => {
      // Some input methods (and DevTools automation) deliver Enter as a
      // separate keypress; it must not leave a newline in the emptied box.
      if (e.key === "Enter" && !e.shiftKey) e.preventDefault();
    });
    $("input").addEventListener("input", () => {
      autoGrow();
      updateHint();
    });
    $("file").addEventListener("change", (e) => {
      state.files.push(...e.target.files);
      e.target.value = "";
      renderPendingFiles();
    });
    $("new-chat").addEventListener("click", newChat);
    $("menu").addEventListener("click", () => {
      document.body.classList.add("sidebar-open");
      $("scrim").hidden = false;
    });
    $("scrim").addEventListener("click", closeSidebar);
    $("logout").addEventListener("click", async () => {
      await api("POST", "/api/logout").catch(() => {});
      location.replace("/");
    });

    try {
      const st = await api("GET", "/api/state");
      $("who").textContent = st.identity;
      setNotice(st.notice);
      if (Array.isArray(st.commands) && st.commands.length) {
        COMMANDS = st.commands.map((c) => [
          "/" + c.name,
          (c.args ? c.args + " — " : "") + c.description + (c.admin ? " (admins)" : ""),
        ]);
      }
    } catch (e) {
      toast(e.message, "error");
    }
    await loadChats();
    const fromHash = decodeURIComponent(location.hash.slice(1));
    if (/^[A-Za-z0-9._-]{1,128}$/.test(fromHash)) await openChat(fromHash, state.listed.has(fromHash));
    else await newChat();
  }

  start();
})();
