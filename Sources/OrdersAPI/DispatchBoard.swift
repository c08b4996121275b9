/// The dispatch board of `GET /` (DESIGN §11): one self-contained page — HTML, CSS and script, no
/// network access beyond the change feed, no external fonts or libraries, no build step. It keeps
/// the orders of the feed in memory, drawn as a column per status with a card per order, and
/// reconnects by itself: the browser's EventSource resumes with `Last-Event-ID`; when the stream
/// is refused or closed, the page opens a new one with `?since=` its last id. After a `reset` it
/// drops what it had and draws the snapshot that follows, so it always ends equal to the store.
///
/// With `api.auth: bearer` the page asks for a token once and trades it for a session
/// (`POST /v1/session`, an HttpOnly cookie): no token is ever in a URL it opens. A `/?access_token=`
/// link still works: the page trades that token at once and takes it out of the address bar.
/// `#who` shows the consumer's name and stores; `#login` is the token form.
/// The DOM is the test's contract: `section.column[data-status]` with `.count`, `article.card[data-id]`,
/// and `#connection[data-state]` (`connecting`, `live`, `reconnecting`, `resynced`, `signed-out`).
enum DispatchBoard {
    static let html = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>orderlive · dispatch board</title>
    <style>
    :root { color-scheme: light dark; --bg: #f4f5f7; --fg: #16181d; --muted: #5d6470; --card: #fff; --line: #d9dce1;
            --live: #1a7f37; --warn: #b35900; --flash: #ffe58a; }
    @media (prefers-color-scheme: dark) {
      :root { --bg: #111317; --fg: #eef0f3; --muted: #9aa3af; --card: #1c1f25; --line: #2c313a; --flash: #6b5a12; }
    }
    * { box-sizing: border-box; }
    body { margin: 0; font: 15px/1.35 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: var(--bg); color: var(--fg); }
    header { display: flex; flex-wrap: wrap; gap: .75rem 1.5rem; align-items: center; padding: .75rem 1rem; border-bottom: 1px solid var(--line); }
    h1 { font-size: 1.15rem; margin: 0; font-weight: 650; }
    #total { color: var(--muted); }
    label { color: var(--muted); }
    select { font: inherit; padding: .15rem .4rem; }
    #connection { margin-left: auto; font-weight: 600; padding: .15rem .6rem; border-radius: 999px; border: 1px solid currentColor; }
    #connection[data-state="live"], #connection[data-state="resynced"] { color: var(--live); }
    #connection[data-state="reconnecting"], #connection[data-state="connecting"] { color: var(--warn); }
    main { display: grid; grid-auto-flow: column; grid-auto-columns: minmax(13rem, 1fr); gap: .75rem; padding: .75rem 1rem;
           overflow-x: auto; min-height: calc(100vh - 3.5rem); align-items: start; }
    .column { background: color-mix(in srgb, var(--card) 55%, transparent); border: 1px solid var(--line); border-radius: .6rem; padding: .5rem; }
    .column h2 { display: flex; justify-content: space-between; margin: .1rem .25rem .5rem; font-size: .95rem; text-transform: uppercase; letter-spacing: .04em; }
    .count { font-variant-numeric: tabular-nums; color: var(--muted); }
    .card { background: var(--card); border: 1px solid var(--line); border-radius: .45rem; padding: .45rem .6rem; margin-bottom: .45rem; }
    .card .id { font-weight: 650; font-variant-numeric: tabular-nums; }
    .card .meta, .card .age { color: var(--muted); font-size: .85rem; }
    .card .summary { font-size: .9rem; overflow-wrap: anywhere; }
    .card.changed { animation: flash 2.5s ease-out; }
    @keyframes flash { from { background: var(--flash); } to { background: var(--card); } }
    #who { color: var(--muted); }
    #login { display: flex; gap: .5rem; align-items: center; padding: 2rem 1rem; }
    #login[hidden], #signout[hidden] { display: none; }
    #login input { font: inherit; padding: .25rem .5rem; min-width: 18rem; }
    #login .problem { color: var(--warn); }
    button { font: inherit; padding: .15rem .6rem; }
    @media (min-width: 1800px) { body { font-size: 19px; } }
    </style>
    </head>
    <body>
    <header>
      <h1>Dispatch board</h1>
      <span id="total">0 orders</span>
      <label>Store <select id="store"><option value="">all stores</option></select></label>
      <span id="who"></span>
      <button id="signout" type="button" hidden>Sign out</button>
      <span id="connection" data-state="connecting" role="status" aria-live="polite">connecting</span>
    </header>
    <div id="login" hidden>
      <label>Token <input id="token" type="password" autocomplete="off" spellcheck="false"></label>
      <button id="signin" type="button">Sign in</button>
      <span class="problem" id="problem"></span>
    </div>
    <main id="board"></main>
    <script>
    "use strict";
    const LIFECYCLE = ["created", "assigned", "picked_up", "delivering", "delivered", "cancelled"];
    const params = new URLSearchParams(location.search);
    const orders = new Map();      // id → {order, changedAt}
    let lastId = null;             // the last change id received: where a new connection resumes
    let source = null, retryTimer = null, resyncTimer = null, synced = false;
    const changed = new Set();
    const board = document.getElementById("board");
    const storeSelect = document.getElementById("store");
    storeSelect.value = params.get("store_id") || "";

    function setState(state) {
      const el = document.getElementById("connection");
      el.dataset.state = state;
      el.textContent = state;
    }
    function text(value) { return value === null || value === undefined ? "" : String(value); }
    function compareIds(a, b) { return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0); }
    function summary(order) {
      const parts = [];
      const customer = order.customer;
      if (typeof customer === "string") parts.push(customer);
      else if (customer && typeof customer === "object") parts.push(text(customer.name || customer.id));
      const address = order.address || order.delivery_address;
      if (typeof address === "string") parts.push(address);
      else if (address && typeof address === "object") parts.push([address.line1 || address.street, address.city].filter(Boolean).join(", "));
      if (!parts.length && order.note) parts.push(text(order.note));
      if (typeof order.total_cents === "number" && Number.isFinite(order.total_cents)) parts.push((order.total_cents / 100).toFixed(2));
      return parts.filter(Boolean).join(" · ");
    }
    function age(since) {
      const seconds = Math.max(0, Math.round((Date.now() - since) / 1000));
      if (seconds < 60) return seconds + " s ago";
      if (seconds < 3600) return Math.floor(seconds / 60) + " min ago";
      return Math.floor(seconds / 3600) + " h ago";
    }
    function changedAt(order) {
      const stamp = Date.parse(order.updated_at);
      return Number.isFinite(stamp) && stamp <= Date.now() ? stamp : Date.now();
    }

    function render() {
      const store = storeSelect.value;
      const statuses = LIFECYCLE.slice();
      const stores = new Set();
      for (const { order } of orders.values()) {
        const status = text(order.status);
        if (!statuses.includes(status)) statuses.push(status);
        if (order.store_id !== null && order.store_id !== undefined) stores.add(text(order.store_id));
      }
      const known = new Set(Array.from(storeSelect.options).map(o => o.value));
      for (const id of Array.from(stores).sort(compareIds)) {
        if (!known.has(id)) storeSelect.add(new Option("store " + id, id));
      }
      const columns = new Map(statuses.map(s => [s, []]));
      let shown = 0;
      for (const [id, entry] of orders) {
        if (store && text(entry.order.store_id) !== store) continue;
        columns.get(text(entry.order.status)).push([id, entry]);
        shown += 1;
      }
      const fragment = document.createDocumentFragment();
      for (const [status, cards] of columns) {
        const column = document.createElement("section");
        column.className = "column";
        column.dataset.status = status;
        const heading = document.createElement("h2");
        const name = document.createElement("span");
        name.textContent = status.replace(/_/g, " ");
        const count = document.createElement("span");
        count.className = "count";
        count.textContent = cards.length;
        heading.append(name, count);
        column.append(heading);
        cards.sort((a, b) => compareIds(a[0], b[0]));
        for (const [id, { order, changedAt }] of cards) {
          const card = document.createElement("article");
          card.className = "card" + (changed.has(id) ? " changed" : "");
          card.dataset.id = id;
          const title = document.createElement("div");
          title.className = "id";
          title.textContent = "#" + id;
          const meta = document.createElement("div");
          meta.className = "meta";
          meta.textContent = ["store " + (text(order.store_id) || "—"), "courier " + (text(order.courier_id) || "—")].join(" · ");
          const line = document.createElement("div");
          line.className = "summary";
          line.textContent = summary(order);
          const when = document.createElement("div");
          when.className = "age";
          when.dataset.since = changedAt;
          when.textContent = age(changedAt);
          card.append(title, meta, line, when);
          column.append(card);
        }
        fragment.append(column);
      }
      board.replaceChildren(fragment);
      changed.clear();
      document.getElementById("total").textContent = shown + (shown === 1 ? " order" : " orders");
    }
    let scheduled = false;
    function scheduleRender() {
      if (scheduled) return;
      scheduled = true;
      requestAnimationFrame(() => { scheduled = false; render(); });
    }

    function feedURL() {
      const url = new URL("/v1/orders/stream", location.href);
      if (lastId !== null) url.searchParams.set("since", lastId);
      return url;
    }
    // The session: a token is sent once, in a header, and the cookie carries the rest.
    async function signIn(token) {
      const answer = await fetch("/v1/session", { method: "POST", headers: { Authorization: "Bearer " + token }, cache: "no-store" });
      return answer.status === 204;
    }
    function showLogin(problem) {
      if (source) source.close();
      document.getElementById("login").hidden = false;
      document.getElementById("signout").hidden = true;
      document.getElementById("who").textContent = "";
      document.getElementById("problem").textContent = problem || "";
      setState("signed-out");
      document.getElementById("token").focus();
    }
    async function start() {
      clearTimeout(retryTimer);
      let answer;
      try {
        answer = await fetch("/v1/session", { cache: "no-store" });
      } catch (error) {
        setState("reconnecting");
        retryTimer = setTimeout(start, 2000);
        return;
      }
      if (answer.status === 401) { showLogin(lastId === null ? "" : "the session has ended; sign in again"); return; }
      if (!answer.ok) { setState("reconnecting"); retryTimer = setTimeout(start, 2000); return; }
      const who = await answer.json();
      const label = document.getElementById("who");
      label.dataset.consumer = who.consumer;
      label.dataset.stores = Array.isArray(who.stores) ? who.stores.join(",") : "*";
      label.textContent = who.via === "none" ? "" : who.consumer + " · " + (Array.isArray(who.stores) ? "store " + who.stores.join(", ") : "every store");
      document.getElementById("signout").hidden = who.via !== "session";
      document.getElementById("login").hidden = true;
      connect();
    }
    async function submitToken() {
      const input = document.getElementById("token");
      const token = input.value.trim();
      input.value = "";
      if (!token) return;
      if (await signIn(token)) start(); else showLogin("that token was refused");
    }
    document.getElementById("signin").addEventListener("click", submitToken);
    document.getElementById("token").addEventListener("keydown", (event) => { if (event.key === "Enter") submitToken(); });
    document.getElementById("signout").addEventListener("click", async () => {
      await fetch("/v1/session", { method: "DELETE", cache: "no-store" });
      orders.clear(); lastId = null; synced = false; render();
      showLogin("");
    });
    function connect() {
      clearTimeout(retryTimer);
      if (source) source.close();
      source = new EventSource(feedURL());
      let resetting = false;
      source.addEventListener("open", () => { if (synced) setState("live"); });
      source.addEventListener("reset", () => { resetting = true; orders.clear(); synced = false; });
      source.addEventListener("snapshot", (event) => {
        const order = JSON.parse(event.data).order;
        orders.set(text(order.id), { order, changedAt: changedAt(order) });
      });
      source.addEventListener("ready", (event) => {
        lastId = event.lastEventId;
        synced = true;
        setState(resetting ? "resynced" : "live");
        clearTimeout(resyncTimer);
        if (resetting) resyncTimer = setTimeout(() => { if (source.readyState === EventSource.OPEN) setState("live"); }, 5000);
        resetting = false;
        render();
      });
      source.addEventListener("order.upserted", (event) => {
        const order = JSON.parse(event.data).order;
        const id = text(order.id);
        orders.set(id, { order, changedAt: Date.now() });
        changed.add(id);
        lastId = event.lastEventId;
        if (synced) scheduleRender();
      });
      for (const name of ["order.removed", "order.deleted"]) {
        source.addEventListener(name, (event) => {
          orders.delete(text(JSON.parse(event.data).order_id));
          lastId = event.lastEventId;
          if (synced) scheduleRender();
        });
      }
      source.addEventListener("error", () => {
        setState("reconnecting");
        // A refused or ended stream (503, 401, a server gone) closes the EventSource for good:
        // check the session (it may have ended), then open a new one that resumes from the last id.
        if (source.readyState === EventSource.CLOSED) retryTimer = setTimeout(start, 2000);
      });
    }
    storeSelect.addEventListener("change", () => {
      const url = new URL(location.href);
      if (storeSelect.value) url.searchParams.set("store_id", storeSelect.value); else url.searchParams.delete("store_id");
      history.replaceState(null, "", url);
      render();
    });
    setInterval(() => {
      for (const el of document.querySelectorAll(".age")) el.textContent = age(Number(el.dataset.since));
    }, 10000);
    render();
    (async () => {
      const linked = params.get("access_token");
      if (linked) {
        // A link with a token: trade it for a session and take it out of the address bar and history.
        const url = new URL(location.href);
        url.searchParams.delete("access_token");
        history.replaceState(null, "", url);
        if (!(await signIn(linked))) { showLogin("the link's token was refused"); return; }
      }
      start();
    })();
    </script>
    </body>
    </html>
    """#
}
