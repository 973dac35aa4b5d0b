// The Memory panel of Azure OpenAI Memory: what the agent remembers, for the people it is
// about. One ES module without a build step or imports: everything it shows comes through
// the integration's WebSocket commands (azure_openai_memory/...), a page at a time.
// It looks like Home Assistant by using Home Assistant's CSS variables (light and dark).

const DOMAIN = "azure_openai_memory";
const PAGE = 50;
const SERIES_PAGE = 25;
const CONVERSATION_PAGE = 20;
const SEARCH_DELAY_MS = 300;
const TABS = ["memories", "conversations", "history", "summaries", "series"];
const MEMORY_TYPES = [
  "preference",
  "household",
  "routine",
  "context",
  "insight",
  "injury_history",
  "training_response",
];
const EVENT_TYPES = [
  "communication",
  "decision",
  "tool_use",
  "action",
  "state_change",
  "error",
  "thought",
  "system",
];
const PERIODS = ["daily", "weekly", "monthly", "era"];

// Every word the page shows, in one place.
const TEXT = {
  title: "Memory",
  menu: "Open the sidebar",
  tabs: {
    memories: "Memories",
    conversations: "Conversations",
    history: "History",
    summaries: "Summaries",
    series: "Series",
  },
  tabList: "Kinds of memory",
  adminOnly: "Only an administrator sees this part of the memory.",
  loading: "Loading…",
  nothing: "Nothing here yet.",
  previous: "Previous page",
  next: "Next page",
  showing: (first, last, total) => `${first}–${last} of ${total}`,
  search: "Search memories",
  searchHint: "Words or a question",
  type: "Type",
  allTypes: "All types",
  tag: "Tag",
  tagHint: "e.g. person:anna",
  confidence: "Confidence at least",
  anyConfidence: "Any",
  archived: "Archived",
  whose: "Whose",
  everyone: "All",
  household: "Household",
  mine: "Mine",
  private: "Private",
  whoseLabel: (name) => `whose: ${name}`,
  provenance: (p) =>
    [`from ${p.source}`, p.authority, p.channel ? `via ${p.channel}` : null].filter(Boolean).join(" · "),
  pinned: "Pinned",
  edit: "Edit",
  save: "Save",
  cancel: "Cancel",
  content: "Content",
  tags: "Tags (comma-separated)",
  pin: "Pin",
  unpin: "Unpin",
  forget: "Forget",
  erase: "Erase",
  restore: "Restore",
  occurrences: (n) => `seen ${n}×`,
  updated: "updated",
  source: "source",
  archivedBecause: "Archived",
  supersededBy: "Replaced by",
  eraseTitle: "Erase this memory for good?",
  eraseBody:
    "It is deleted, not archived, and cannot be restored. What else goes: the history " +
    "events that carried it (the agent's remember and recall tool calls and the memory " +
    "service calls naming it).",
  eraseConfirm: "Erase",
  forgotten: "Forgotten: it is in the archive.",
  erased: (events) =>
    events === null
      ? "Erased. The history could not be reached: it may still hold the memory."
      : `Erased, with ${events} history event${events === 1 ? "" : "s"}.`,
  edited: "Saved. The old words are in the archive.",
  unchanged: "Nothing changed.",
  restored: "Restored.",
  pinnedDone: "Pinned: never pushed out, shown first.",
  unpinnedDone: "Unpinned.",
  agent: "Agent",
  conversation: "Conversation",
  messages: (n) => `${n} message${n === 1 ? "" : "s"}`,
  tokens: (used, budget) => `${used} of ${budget} tokens`,
  lastActivity: "last activity",
  open: "Open",
  close: "Close",
  reset: "Reset",
  resetAll: "Reset every conversation",
  resetTitle: "Forget this conversation's window?",
  resetAllTitle: "Forget every conversation of this agent?",
  resetBody: "The agent no longer sees what was said in it. The history keeps its events.",
  resetDone: (n) => `${n} conversation${n === 1 ? "" : "s"} reset.`,
  allAgents: "All agents",
  eventType: "Event type",
  allEventTypes: "All types",
  day: "Day",
  totalEvents: "Events",
  sessions: "Conversations",
  snapshots: "Snapshots",
  earliest: "First",
  latest: "Last",
  showTurn: "Show the turn",
  hideTurn: "Hide the turn",
  summariseNow: "Summarise today now",
  summarised: (counts) =>
    `Written: ${counts.daily} daily, ${counts.weekly} weekly, ${counts.monthly} monthly.`,
  periods: { daily: "Dailies", weekly: "Weeklies", monthly: "Monthlies", era: "Eras" },
  extractive: "written without the model",
  topics: "Topics",
  highlights: "Highlights",
  groupMode: (mode) => `Grouped by ${mode}`,
  count: (n) => `${n} entr${n === 1 ? "y" : "ies"}`,
  coverage: { full: "full coverage", partial: "gaps", none: "nothing fetched" },
  coverageLabel: (key, gaps) =>
    `Coverage of ${key}: fetched windows, and ${gaps} gap${gaps === 1 ? "" : "s"}`,
  gap: "gap",
  covered: "fetched",
  chartLabel: (key) => `Entries of ${key} over time`,
  approximate: "Some gaps were merged away: coverage there is approximate.",
  entries: "Entries",
  time: "Time",
  entry: "Entry",
  back: "Back to every series",
  failed: "Failed",
};

// -- small DOM helpers ---------------------------------------------------------------------

/** An element with attributes, properties (keys starting with "."), listeners ("@...")
 * and children (strings become text: nothing is ever parsed as HTML). */
function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("@")) node.addEventListener(name.slice(1), value);
    else if (name.startsWith(".")) node[name.slice(1)] = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  append(node, children);
  return node;
}

function field(label, control) {
  return h("label", { class: "field" }, h("span", { class: "label" }, label), control);
}

function select(label, value, options, onChange) {
  return field(
    label,
    h(
      "select",
      { "@change": (ev) => onChange(ev.target.value) },
      options.map(([optionValue, text]) =>
        h("option", { value: optionValue, selected: optionValue === value }, text),
      ),
    ),
  );
}

function button(text, onClick, attrs = {}) {
  return h("button", { type: "button", "@click": onClick, ...attrs }, text);
}

function chips(values, className = "chip") {
  return h("span", { class: "chips" }, values.map((v) => h("span", { class: className }, v)));
}

const STYLE = `
:host {
  display: block;
  min-height: 100%;
  background: var(--primary-background-color, #fafafa);
  color: var(--primary-text-color, #212121);
  font-family: var(--ha-font-family-body, var(--mdc-typography-font-family, var(--paper-font-body1_-_font-family, Roboto, "Noto Sans", sans-serif)));
  font-size: var(--ha-font-size-m, 14px);
  -webkit-font-smoothing: antialiased;
}
* { box-sizing: border-box; }
[hidden] { display: none !important; }
header.toolbar {
  display: flex; align-items: center; gap: 8px;
  height: var(--header-height, 56px); padding: 0 16px;
  background: var(--app-header-background-color, var(--primary-color, #03a9f4));
  color: var(--app-header-text-color, var(--text-primary-color, #fff));
  border-bottom: var(--app-header-border-bottom, none);
  position: sticky; top: 0; z-index: 2;
}
header h1 { font-size: 20px; font-weight: 400; margin: 0 0 0 8px; }
header .menu {
  background: none; border: none; color: inherit; width: 40px; height: 40px;
  border-radius: 50%; display: inline-flex; align-items: center; justify-content: center;
  padding: 0; cursor: pointer;
}
header .menu svg { width: 24px; height: 24px; fill: currentColor; }
nav[role=tablist] {
  display: flex; overflow-x: auto; gap: 0; padding: 0 8px;
  background: var(--app-header-background-color, var(--primary-color, #03a9f4));
  color: var(--app-header-text-color, var(--text-primary-color, #fff));
  position: sticky; top: var(--header-height, 56px); z-index: 2;
}
nav[role=tablist] button {
  background: none; border: none; color: inherit; opacity: 0.75; cursor: pointer;
  padding: 12px 16px; font: inherit; font-weight: 500; text-transform: uppercase;
  letter-spacing: 0.05em; border-bottom: 2px solid transparent; white-space: nowrap;
}
nav[role=tablist] button[aria-selected=true] { opacity: 1; border-bottom-color: currentColor; }
main { max-width: 1000px; margin: 0 auto; padding: 16px; }
.card {
  background: var(--ha-card-background, var(--card-background-color, #fff));
  border-radius: var(--ha-card-border-radius, 12px);
  border: 1px solid var(--divider-color, #e0e0e0);
  box-shadow: var(--ha-card-box-shadow, none);
  padding: 12px 16px; margin: 0 0 12px;
}
.filters { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-end; margin-bottom: 12px; }
.field { display: flex; flex-direction: column; gap: 4px; min-width: 140px; flex: 1 1 140px; }
.field.wide { flex: 3 1 240px; }
.field.check { flex-direction: row; align-items: center; min-width: 0; flex: 0 0 auto; }
.label { font-size: 12px; color: var(--secondary-text-color, #727272); }
input, select, textarea {
  font: inherit; color: var(--primary-text-color, #212121);
  background: var(--input-fill-color, var(--secondary-background-color, #f5f5f5));
  border: 1px solid var(--input-idle-line-color, var(--divider-color, #ccc));
  border-radius: 4px; padding: 8px; min-height: 40px; width: 100%;
}
input[type=checkbox] { width: 20px; min-height: 20px; margin: 0 8px 0 0; accent-color: var(--primary-color); }
textarea { min-height: 80px; resize: vertical; }
button {
  font: inherit; font-weight: 500; cursor: pointer; border-radius: 4px;
  border: 1px solid var(--divider-color, #ccc); padding: 6px 12px; min-height: 36px;
  background: var(--card-background-color, #fff); color: var(--primary-color, #03a9f4);
}
button.primary { background: var(--primary-color, #03a9f4); color: var(--text-primary-color, #fff); border-color: transparent; }
button.danger { color: var(--error-color, #db4437); }
button.danger.primary { background: var(--error-color, #db4437); color: var(--text-primary-color, #fff); }
button[aria-pressed=true] { background: var(--primary-color, #03a9f4); color: var(--text-primary-color, #fff); }
button:disabled { opacity: 0.5; cursor: default; }
:focus-visible { outline: 2px solid var(--primary-color, #03a9f4); outline-offset: 2px; }
ul.rows { list-style: none; margin: 0; padding: 0; }
.content { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0 0 6px; }
.meta { color: var(--secondary-text-color, #727272); font-size: 12px; display: flex; flex-wrap: wrap; gap: 4px 12px; align-items: center; }
.chips { display: inline-flex; flex-wrap: wrap; gap: 4px; }
.chip {
  font-size: 12px; padding: 2px 8px; border-radius: 12px;
  background: var(--secondary-background-color, #eee); color: var(--primary-text-color, #212121);
  border: 1px solid var(--divider-color, #ddd);
}
.badge { font-size: 11px; padding: 1px 6px; border-radius: 8px; background: var(--primary-color, #03a9f4); color: var(--text-primary-color, #fff); }
.badge.warning { background: var(--warning-color, #ffa600); }
.actions { display: flex; flex-wrap: wrap; gap: 8px; margin-top: 8px; }
.pager { display: flex; align-items: center; justify-content: space-between; gap: 8px; margin: 8px 0 24px; }
.status { min-height: 20px; margin: 0 0 8px; color: var(--secondary-text-color, #727272); }
.status:empty { min-height: 0; margin: 0; }
.status.error { color: var(--error-color, #db4437); }
.note { color: var(--secondary-text-color, #727272); padding: 24px 0; text-align: center; }
.stats { display: flex; flex-wrap: wrap; gap: 12px 24px; }
.stat b { display: block; font-size: 20px; font-weight: 400; color: var(--primary-text-color, #212121); }
.stat { color: var(--secondary-text-color, #727272); font-size: 12px; }
.bar { height: 10px; border-radius: 5px; background: var(--secondary-background-color, #eee); overflow: hidden; border: 1px solid var(--divider-color, #ddd); }
.bar > span { display: block; height: 100%; background: var(--primary-color, #03a9f4); }
.bar.full > span { background: var(--warning-color, #ffa600); }
svg.coverage { width: 100%; height: 18px; display: block; margin: 6px 0; }
svg.coverage .covered { fill: var(--success-color, #43a047); }
svg.coverage .gap { fill: var(--error-color, #db4437); }
svg.coverage .none { fill: var(--secondary-background-color, #eee); }
svg.chart { width: 100%; height: 120px; display: block; }
svg.chart rect { fill: var(--primary-color, #03a9f4); }
svg.chart line { stroke: var(--divider-color, #ccc); }
.legend { display: flex; gap: 16px; font-size: 12px; color: var(--secondary-text-color, #727272); }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; vertical-align: middle; }
.legend .covered { background: var(--success-color, #43a047); }
.legend .gap { background: var(--error-color, #db4437); }
.strip { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin: 6px 0; }
.strip .name { width: 90px; color: var(--secondary-text-color, #727272); font-size: 12px; }
.turn { margin: 8px 0 0; padding: 0; list-style: none; border-left: 2px solid var(--divider-color, #ddd); }
.turn li { padding: 4px 8px; }
.event-head { display: flex; flex-wrap: wrap; gap: 8px; align-items: baseline; }
.mono { font-family: var(--ha-font-family-code, var(--code-font-family, monospace)); font-size: 12px; overflow-wrap: anywhere; }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--divider-color, #ddd); vertical-align: top; }
th { font-weight: 500; color: var(--secondary-text-color, #727272); font-size: 12px; }
dialog {
  border: none; border-radius: var(--ha-dialog-border-radius, 24px); padding: 24px;
  background: var(--mdc-theme-surface, var(--card-background-color, #fff));
  color: var(--primary-text-color, #212121); max-width: min(640px, 94vw); width: 100%;
  max-height: 86vh; overflow: auto;
}
dialog::backdrop { background: rgba(0, 0, 0, 0.4); }
dialog h2 { margin: 0 0 12px; font-size: 20px; font-weight: 400; }
.role { font-weight: 500; text-transform: capitalize; }
@media (max-width: 600px) {
  main { padding: 8px; }
  .card { padding: 10px 12px; border-radius: 8px; }
  .strip .name { width: 100%; }
  nav[role=tablist] button { padding: 12px 10px; }
}
`;

const MENU_ICON = () =>
  s(
    "svg",
    { viewBox: "0 0 24 24", "aria-hidden": "true" },
    s("rect", { x: 3, y: 6, width: 18, height: 2 }),
    s("rect", { x: 3, y: 11, width: 18, height: 2 }),
    s("rect", { x: 3, y: 16, width: 18, height: 2 }),
  );

class MemoryPanel extends HTMLElement {
  constructor() {
    super();
    this.attachShadow({ mode: "open" });
    this._hass = null;
    this._narrow = false;
    this._access = null;
    this._tab = "memories";
    this._memories = { offset: 0, query: "", scope: "", type: "", tag: "", confidence: "", archived: false };
    this._editing = null;
    this._history = { offset: 0, agent: "", type: "", day: "", open: new Set() };
    this._summaries = { offset: 0 };
    this._series = { offset: 0, key: null, entriesOffset: 0 };
    this._conversations = { offset: 0 };
    this._searchTimer = null;
    this._loadToken = 0;
    // A tab named in the address (#series), also by the browser's back and forward.
    this._onHash = () => {
      const tab = location.hash.slice(1);
      if (this._access && this._visibleTabs().includes(tab)) this._select(tab);
    };
  }

  connectedCallback() {
    window.addEventListener("hashchange", this._onHash);
  }

  disconnectedCallback() {
    window.removeEventListener("hashchange", this._onHash);
    clearTimeout(this._searchTimer);
  }

  set hass(hass) {
    const first = this._hass === null;
    this._hass = hass;
    if (first) this._start();
  }

  get hass() {
    return this._hass;
  }

  set narrow(narrow) {
    this._narrow = narrow;
    const menu = this.shadowRoot.querySelector("header .menu");
    if (menu) menu.hidden = !narrow;
  }

  set panel(_panel) {}

  set route(_route) {}

  async _start() {
    const root = this.shadowRoot;
    this._status = h("p", { class: "status", role: "status", "aria-live": "polite" });
    this._filters = h("div", { class: "filters-slot" });
    this._body = h("div", { class: "body", tabindex: "-1" });
    this._view = h("main", { id: "view", role: "tabpanel" }, this._status, this._filters, this._body);
    this._dialog = h("dialog", { "aria-modal": "true" });
    this._tablist = h("nav", { role: "tablist", "aria-label": TEXT.tabList });
    root.replaceChildren(
      h("style", {}, STYLE),
      h(
        "header",
        { class: "toolbar" },
        h(
          "button",
          {
            class: "menu",
            type: "button",
            "aria-label": TEXT.menu,
            title: TEXT.menu,
            hidden: !this._narrow,
            "@click": () =>
              this.dispatchEvent(new Event("hass-toggle-menu", { bubbles: true, composed: true })),
          },
          MENU_ICON(),
        ),
        h("h1", {}, TEXT.title),
      ),
      this._tablist,
      this._view,
      this._dialog,
    );
    try {
      await this._hass.loadBackendTranslation?.("exceptions", DOMAIN);
    } catch (_err) {
      // Without translations an error shows Home Assistant's own message.
    }
    try {
      this._access = await this._ws("panel/access");
    } catch (err) {
      this._showError(err);
      return;
    }
    const wanted = (location.hash || "").slice(1);
    if (TABS.includes(wanted)) this._tab = wanted;
    this._renderTabs();
    this._renderFilters();
    this._load();
  }

  // -- plumbing -----------------------------------------------------------------------------

  _ws(name, fields = {}) {
    return this._hass.callWS({ type: `${DOMAIN}/${name}`, ...fields });
  }

  _message(err) {
    if (err && err.translation_key && this._hass.localize) {
      const key = `component.${DOMAIN}.exceptions.${err.translation_key}.message`;
      const text = this._hass.localize(key, err.translation_placeholders || {});
      if (text) return text;
    }
    return (err && err.message) || String(err);
  }

  _say(text) {
    this._status.className = "status";
    this._status.setAttribute("role", "status");
    this._status.textContent = text;
  }

  _showError(err) {
    this._status.className = "status error";
    this._status.setAttribute("role", "alert");
    this._status.textContent = `${TEXT.failed}: ${this._message(err)}`;
  }

  _when(iso) {
    if (!iso) return "";
    const hass = this._hass;
    const options = { dateStyle: "medium", timeStyle: "short" };
    if (hass.config?.time_zone) options.timeZone = hass.config.time_zone;
    try {
      return new Intl.DateTimeFormat(hass.locale?.language || hass.language || "en", options).format(
        new Date(iso),
      );
    } catch (_err) {
      return iso;
    }
  }

  _day(isoDay) {
    const hass = this._hass;
    try {
      return new Intl.DateTimeFormat(hass.locale?.language || hass.language || "en", {
        day: "numeric",
        month: "short",
        timeZone: "UTC",
      }).format(new Date(`${isoDay}T00:00:00Z`));
    } catch (_err) {
      return isoDay;
    }
  }

  _visibleTabs() {
    return TABS.filter((tab) => this._access?.tabs?.[tab] !== false);
  }

  _renderTabs() {
    const tabs = this._visibleTabs();
    if (!tabs.includes(this._tab)) this._tab = tabs[0];
    this._tablist.replaceChildren(
      ...tabs.map((tab) =>
        h(
          "button",
          {
            type: "button",
            role: "tab",
            id: `tab-${tab}`,
            "aria-selected": String(tab === this._tab),
            "aria-controls": "view",
            tabindex: tab === this._tab ? "0" : "-1",
            "@click": () => this._select(tab),
            "@keydown": (ev) => this._tabKey(ev, tabs),
          },
          TEXT.tabs[tab],
        ),
      ),
    );
    this._view.setAttribute("aria-labelledby", `tab-${this._tab}`);
  }

  _tabKey(ev, tabs) {
    const index = tabs.indexOf(this._tab);
    const moves = { ArrowRight: 1, ArrowLeft: -1, Home: -index, End: tabs.length - 1 - index };
    if (!(ev.key in moves)) return;
    ev.preventDefault();
    const next = tabs[(index + moves[ev.key] + tabs.length) % tabs.length];
    this._select(next);
    this.shadowRoot.getElementById(`tab-${next}`)?.focus();
  }

  _select(tab) {
    if (tab === this._tab) return;
    this._tab = tab;
    if (location.hash !== `#${tab}`) history.replaceState(history.state, "", `#${tab}`);
    this._say("");
    this._renderTabs();
    this._renderFilters();
    this._load();
  }

  /** A tab's filters stay while its pages load, so typing in them keeps its place. */
  _renderFilters() {
    const filters = {
      memories: () => this._memoryFilters(),
      history: () => this._historyFilters(),
      summaries: () => this._summaryTools(),
    }[this._tab];
    this._filters.replaceChildren(...(filters ? [filters()] : []));
  }

  /** Show the current tab: its content is replaced when its data has arrived (a newer
   * load wins over a slower older one); focus moves to it when asked (a new page). */
  async _load(focus = false) {
    const token = ++this._loadToken;
    const render = {
      memories: () => this._memoriesView(),
      conversations: () => this._conversationsView(),
      history: () => this._historyView(),
      summaries: () => this._summariesView(),
      series: () => this._seriesView(),
    }[this._tab];
    const body = this._body;
    body.setAttribute("aria-busy", "true");
    if (!body.firstChild || body.dataset.tab !== this._tab) {
      body.replaceChildren(h("p", { class: "note" }, TEXT.loading));
    }
    body.dataset.tab = this._tab;
    try {
      const content = await render();
      if (token !== this._loadToken) return;
      body.replaceChildren(content);
      body.dataset.loaded = String(token);
      if (focus) body.focus();
    } catch (err) {
      if (token !== this._loadToken) return;
      body.replaceChildren(
        h("p", { class: "note" }, err?.code === "unauthorized" ? TEXT.adminOnly : ""),
      );
      if (err?.code !== "unauthorized") this._showError(err);
    } finally {
      if (token === this._loadToken) body.removeAttribute("aria-busy");
    }
  }

  /** Previous and next around "first–last of total"; a total still being counted (null)
   * shows as "…", with the rows shown (shown) telling whether there is a next page. */
  _pager(offset, size, total, go, shown = 0) {
    if (total !== null && total <= size && offset === 0) return h("div", { class: "pager" });
    const last = total === null ? (shown ? offset + shown : 0) : Math.min(offset + size, total);
    const first = last > offset ? offset + 1 : 0;
    return h(
      "div",
      { class: "pager", "aria-busy": total === null ? "true" : null },
      button(TEXT.previous, () => go(Math.max(offset - size, 0)), { disabled: offset === 0 }),
      h("span", {}, TEXT.showing(first, last, total === null ? "…" : total)),
      button(TEXT.next, () => go(offset + size), {
        disabled: total === null ? shown < size : offset + size >= total,
      }),
    );
  }

  _confirm(title, body, confirmText) {
    return new Promise((resolve) => {
      const dialog = this._dialog;
      const done = (answer) => {
        dialog.close();
        resolve(answer);
      };
      dialog.setAttribute("aria-label", title);
      dialog.replaceChildren(
        h("h2", {}, title),
        h("p", {}, body),
        h(
          "div",
          { class: "actions" },
          button(TEXT.cancel, () => done(false)),
          button(confirmText, () => done(true), { class: "danger primary" }),
        ),
      );
      dialog.onclose = () => resolve(false);
      dialog.showModal();
    });
  }

  _showDialog(title, ...content) {
    const dialog = this._dialog;
    dialog.onclose = null;
    dialog.setAttribute("aria-label", title);
    dialog.replaceChildren(
      h("h2", {}, title),
      ...content,
      h("div", { class: "actions" }, button(TEXT.close, () => dialog.close(), { class: "primary" })),
    );
    if (!dialog.open) dialog.showModal();
  }

  // -- memories -----------------------------------------------------------------------------

  async _memoriesView() {
    const state = this._memories;
    const fields = { offset: state.offset, limit: PAGE, archived: state.archived };
    if (state.query.trim()) fields.query = state.query.trim();
    if (state.scope) fields.scope = state.scope;
    if (state.type) fields.memory_type = state.type;
    if (state.tag.trim()) fields.tags = [state.tag.trim()];
    if (state.confidence) fields.min_confidence = state.confidence;
    const result = await this._ws("memories/list", fields);
    const rows = result.memories.map((memory) => this._memoryRow(memory));
    return h(
      "div",
      {},
      rows.length ? h("ul", { class: "rows", "aria-label": TEXT.tabs.memories }, rows) : h("p", { class: "note" }, TEXT.nothing),
      this._pager(state.offset, PAGE, result.total, (offset) => {
        state.offset = offset;
        this._load(true);
      }),
    );
  }

  _memoryFilters() {
    const state = this._memories;
    const changed = (patch, now = true) => {
      Object.assign(state, patch, { offset: 0 });
      clearTimeout(this._searchTimer);
      if (now) this._load();
      else this._searchTimer = setTimeout(() => this._load(), SEARCH_DELAY_MS);
    };
    return h(
      "div",
      { class: "filters" },
      h(
        "label",
        { class: "field wide" },
        h("span", { class: "label" }, TEXT.search),
        h("input", {
          type: "search",
          id: "memory-search",
          placeholder: TEXT.searchHint,
          autocomplete: "off",
          ".value": state.query,
          "@input": (ev) => changed({ query: ev.target.value }, false),
        }),
      ),
      select(TEXT.whose, state.scope, this._whoseOptions(), (scope) => changed({ scope })),
      select(
        TEXT.type,
        state.type,
        [["", TEXT.allTypes], ...MEMORY_TYPES.map((t) => [t, t.replace("_", " ")])],
        (type) => changed({ type }),
      ),
      field(
        TEXT.tag,
        h("input", {
          type: "text",
          placeholder: TEXT.tagHint,
          autocomplete: "off",
          ".value": state.tag,
          "@change": (ev) => changed({ tag: ev.target.value }),
        }),
      ),
      select(
        TEXT.confidence,
        state.confidence,
        [["", TEXT.anyConfidence], ["low", "low"], ["medium", "medium"], ["high", "high"]],
        (confidence) => changed({ confidence }),
      ),
      h(
        "label",
        { class: "field check" },
        h("input", {
          type: "checkbox",
          ".checked": state.archived,
          "@change": (ev) => changed({ archived: ev.target.checked }),
        }),
        TEXT.archived,
      ),
    );
  }

  // The people Home Assistant knows, by person entity id: their names.
  _people() {
    return Object.values(this._hass?.states || {})
      .filter((state) => state.entity_id.startsWith("person."))
      .map((state) => [state.entity_id, state.attributes?.friendly_name || state.entity_id])
      .sort((a, b) => a[1].localeCompare(b[1]));
  }

  // Administrators may list any person's memories; anyone else the household's and their own.
  _whoseOptions() {
    const user = this._access?.user || {};
    const options = [["", TEXT.everyone], ["household", TEXT.household]];
    if (user.person_id) options.push(["private", TEXT.mine]);
    if (user.is_admin)
      for (const [id, name] of this._people())
        if (id !== user.person_id) options.push([`person:${id}`, name]);
    return options;
  }

  _whose(scope) {
    if (scope === "household") return TEXT.household;
    const person = scope?.startsWith("person:") ? scope.slice("person:".length) : null;
    const name = person ? this._hass?.states?.[person]?.attributes?.friendly_name : null;
    return name || TEXT.private;
  }

  _memoryRow(memory) {
    const actions = new Set(memory.actions || []);
    const meta = h(
      "div",
      { class: "meta" },
      memory.pinned && !memory.archived ? h("span", { class: "badge" }, TEXT.pinned) : null,
      h("span", { class: "whose" }, TEXT.whoseLabel(this._whose(memory.scope))),
      h("span", {}, memory.type.replace("_", " ")),
      h("span", {}, memory.confidence),
      h("span", {}, TEXT.occurrences(memory.occurrences)),
      h("span", {}, `${TEXT.updated} ${this._when(memory.updated_at)}`),
      memory.source ? h("span", {}, `${TEXT.source}: ${memory.source}${memory.source_reference ? ` (${memory.source_reference})` : ""}`) : null,
      memory.provenance ? h("span", { class: "provenance" }, TEXT.provenance(memory.provenance)) : null,
      memory.tags?.length ? chips(memory.tags) : null,
    );
    const archivedNote = memory.archived
      ? h(
          "div",
          { class: "meta" },
          h("span", { class: "badge warning" }, TEXT.archivedBecause),
          h("span", {}, `${memory.reason} · ${this._when(memory.archived_at)}`),
          memory.superseded_by_content
            ? h("span", {}, `${TEXT.supersededBy}: “${memory.superseded_by_content}”`)
            : null,
        )
      : null;
    if (this._editing === memory.id) return this._memoryEditor(memory);
    const controls = [];
    if (actions.has("edit"))
      controls.push(
        button(TEXT.edit, () => {
          this._editing = memory.id;
          this._load();
        }, { "aria-label": `${TEXT.edit}: ${memory.content.slice(0, 60)}` }),
      );
    if (actions.has("pin"))
      controls.push(
        button(memory.pinned ? TEXT.unpin : TEXT.pin, () => this._pin(memory), {
          "aria-pressed": String(!!memory.pinned),
          "aria-label": `${TEXT.pin}: ${memory.content.slice(0, 60)}`,
        }),
      );
    if (actions.has("forget"))
      controls.push(button(TEXT.forget, () => this._forget(memory), { "aria-label": `${TEXT.forget}: ${memory.content.slice(0, 60)}` }));
    if (actions.has("restore"))
      controls.push(button(TEXT.restore, () => this._restore(memory), { "aria-label": `${TEXT.restore}: ${memory.content.slice(0, 60)}` }));
    if (actions.has("erase"))
      controls.push(
        button(TEXT.erase, () => this._erase(memory), {
          class: "danger",
          "aria-label": `${TEXT.erase}: ${memory.content.slice(0, 60)}`,
        }),
      );
    return h(
      "li",
      { class: "card memory", "data-id": memory.id },
      h("p", { class: "content" }, memory.content),
      meta,
      archivedNote,
      controls.length ? h("div", { class: "actions" }, controls) : null,
    );
  }

  _memoryEditor(memory) {
    const content = h("textarea", { id: `edit-${memory.id}`, ".value": memory.content });
    const tags = h("input", { type: "text", ".value": (memory.tags || []).join(", ") });
    const save = async () => {
      const tagList = tags.value.split(",").map((t) => t.trim()).filter(Boolean);
      try {
        const result = await this._ws("memories/edit", {
          memory_id: memory.id,
          content: content.value,
          tags: tagList,
        });
        this._editing = null;
        this._say(result.action === "unchanged" ? TEXT.unchanged : TEXT.edited);
        this._load();
      } catch (err) {
        this._showError(err);
      }
    };
    queueMicrotask(() => content.focus());
    return h(
      "li",
      { class: "card memory editing", "data-id": memory.id },
      field(TEXT.content, content),
      field(TEXT.tags, tags),
      h(
        "div",
        { class: "actions" },
        button(TEXT.save, save, { class: "primary" }),
        button(TEXT.cancel, () => {
          this._editing = null;
          this._load();
        }),
      ),
    );
  }

  async _act(promise, said) {
    try {
      const result = await promise;
      this._say(typeof said === "function" ? said(result) : said);
      this._load();
    } catch (err) {
      this._showError(err);
    }
  }

  _pin(memory) {
    const pinned = !memory.pinned;
    this._act(
      this._ws("memories/pin", { memory_id: memory.id, pinned }),
      pinned ? TEXT.pinnedDone : TEXT.unpinnedDone,
    );
  }

  _forget(memory) {
    this._act(this._ws("memories/forget", { memory_id: memory.id }), TEXT.forgotten);
  }

  _restore(memory) {
    this._act(this._ws("memories/restore", { memory_id: memory.id }), TEXT.restored);
  }

  async _erase(memory) {
    if (!(await this._confirm(TEXT.eraseTitle, `“${memory.content}” — ${TEXT.eraseBody}`, TEXT.eraseConfirm)))
      return;
    this._act(this._ws("memories/erase", { memory_id: memory.id }), (result) =>
      TEXT.erased(result.history_events_erased),
    );
  }

  // -- conversations ------------------------------------------------------------------------

  async _conversationsView() {
    const state = this._conversations;
    const result = await this._ws("conversations/list", {
      offset: state.offset,
      limit: CONVERSATION_PAGE,
    });
    if (!result.agents.length) return h("p", { class: "note" }, TEXT.nothing);
    const most = Math.max(...result.agents.map((a) => a.total));
    return h(
      "div",
      {},
      result.agents.map((agent) => this._agentCard(agent)),
      this._pager(state.offset, CONVERSATION_PAGE, most, (offset) => {
        state.offset = offset;
        this._load(true);
      }),
    );
  }

  _agentCard(agent) {
    const where = { entry_id: agent.entry_id, subentry_id: agent.subentry_id };
    const admin = this._access?.user?.is_admin;
    const reset = async (conversationId) => {
      const title = conversationId ? TEXT.resetTitle : TEXT.resetAllTitle;
      if (!(await this._confirm(title, TEXT.resetBody, TEXT.reset))) return;
      const fields = conversationId ? { ...where, conversation_id: conversationId } : where;
      this._act(this._ws("conversations/reset", fields), (r) => TEXT.resetDone(r.reset));
    };
    return h(
      "section",
      { class: "card", "aria-label": `${TEXT.agent} ${agent.title}` },
      h("h2", {}, agent.title),
      h(
        "div",
        { class: "meta" },
        h("span", { class: "mono" }, agent.agent_id),
        h("span", {}, TEXT.messages(agent.totals.messages)),
        h("span", {}, TEXT.tokens(agent.totals.tokens, agent.max_tokens)),
      ),
      agent.conversations.length
        ? h("ul", { class: "rows" }, agent.conversations.map((c) => this._conversationRow(agent, c, reset)))
        : h("p", { class: "note" }, TEXT.nothing),
      admin && agent.total ? h("div", { class: "actions" }, button(TEXT.resetAll, () => reset(null), { class: "danger" })) : null,
    );
  }

  _conversationRow(agent, conversation, reset) {
    const used = conversation.current_tokens;
    const budget = conversation.max_tokens || agent.max_tokens;
    const percent = Math.min(100, budget ? (100 * used) / budget : 0);
    const label = TEXT.tokens(used, budget);
    const tags = Object.entries(conversation.tag_distribution || {}).map(([t, n]) => `${t} ${n}`);
    return h(
      "li",
      { class: "conversation", style: "padding: 8px 0; border-top: 1px solid var(--divider-color, #ddd)" },
      h(
        "div",
        { class: "meta" },
        h("span", { class: "mono" }, conversation.conversation_id),
        h("span", {}, TEXT.messages(conversation.message_count)),
        h("span", {}, label),
        h("span", {}, `${TEXT.lastActivity} ${this._when(conversation.last_activity)}`),
        tags.length ? chips(tags) : null,
      ),
      h(
        "div",
        {
          class: percent > 95 ? "bar full" : "bar",
          role: "meter",
          "aria-label": label,
          "aria-valuemin": "0",
          "aria-valuemax": String(budget),
          "aria-valuenow": String(used),
        },
        h("span", { style: `width: ${percent.toFixed(1)}%` }),
      ),
      h(
        "div",
        { class: "actions" },
        button(TEXT.open, () => this._openConversation(agent, conversation.conversation_id, 0), {
          "aria-label": `${TEXT.open} ${conversation.conversation_id}`,
        }),
        this._access?.user?.is_admin
          ? button(TEXT.reset, () => reset(conversation.conversation_id), {
              class: "danger",
              "aria-label": `${TEXT.reset} ${conversation.conversation_id}`,
            })
          : null,
      ),
    );
  }

  async _openConversation(agent, conversationId, offset) {
    try {
      const read = await this._ws("conversations/read", {
        entry_id: agent.entry_id,
        subentry_id: agent.subentry_id,
        conversation_id: conversationId,
        offset,
        limit: PAGE,
      });
      const messages = read.messages.map((m) =>
        h(
          "li",
          { class: "card" },
          h("div", { class: "meta" }, h("span", { class: "role" }, m.role), h("span", {}, this._when(m.timestamp)), h("span", {}, `${m.token_count} tokens`)),
          m.content ? h("p", { class: "content" }, m.content) : null,
          m.tool_calls.map((call) => h("p", { class: "mono" }, `${call.name}(${JSON.stringify(call.arguments)})`)),
        ),
      );
      this._showDialog(
        `${TEXT.conversation} ${conversationId}`,
        h("p", { class: "meta" }, TEXT.tokens(read.current_tokens, read.max_tokens)),
        h("ul", { class: "rows" }, messages),
        this._pager(offset, PAGE, read.total, (next) => this._openConversation(agent, conversationId, next)),
      );
    } catch (err) {
      this._showError(err);
    }
  }

  // -- history ------------------------------------------------------------------------------

  async _historyView() {
    const state = this._history;
    const fields = { offset: state.offset, limit: PAGE };
    if (state.agent) fields.agent_id = state.agent;
    if (state.type) fields.event_type = state.type;
    if (state.day) fields.day = state.day;
    // Both asked at once; the rows do not wait for the statistics (a count over what a
    // person may see can take longer than their page), which fill their card when they come.
    const statsCard = h(
      "section",
      { class: "card", "aria-label": TEXT.totalEvents, "aria-busy": "true" },
      h("p", { class: "note" }, TEXT.loading),
    );
    const token = this._loadToken;
    this._ws("history/statistics", state.agent ? { agent_id: state.agent } : {}).then(
      (stats) => {
        statsCard.removeAttribute("aria-busy");
        if (token !== this._loadToken) return;
        this._knowAgents(stats.agents);
        statsCard.replaceChildren(...this._statsContent(stats));
      },
      (err) => {
        statsCard.removeAttribute("aria-busy");
        statsCard.replaceChildren(h("p", { class: "note" }, "—"));
        if (token === this._loadToken && err?.code !== "unauthorized") this._showError(err);
      },
    );
    // The page first, uncounted; then its total (counting what a person may see of a
    // year of talk takes longer than their page), which replaces the pager when it comes.
    const page = await this._ws("history/events", { ...fields, count: false });
    const go = (offset) => {
      state.offset = offset;
      this._load(true);
    };
    const shown = page.events.length;
    const pager = this._pager(state.offset, PAGE, page.total, go, shown);
    if (page.total === null) {
      // Filled in where it is (a focused "Next" keeps its focus).
      const counted = (total) => {
        pager.removeAttribute("aria-busy");
        const [previous, range, next] = pager.children;
        if (!previous) return;
        range.textContent = TEXT.showing(shown ? state.offset + 1 : 0, state.offset + shown, total);
        if (typeof total === "number") next.disabled = state.offset + PAGE >= total;
      };
      this._ws("history/events", fields).then(
        (answer) => counted(answer.total),
        (err) => {
          counted("?");
          if (token === this._loadToken && err?.code !== "unauthorized") this._showError(err);
        },
      );
    }
    const events = [];
    for (const event of page.events) events.push(await this._eventRow(event));
    return h(
      "div",
      {},
      statsCard,
      events.length ? h("ul", { class: "rows", "aria-label": TEXT.tabs.history }, events) : h("p", { class: "note" }, TEXT.nothing),
      pager,
    );
  }

  _statsContent(stats) {
    const stat = (label, value) => h("div", { class: "stat" }, h("b", {}, value), label);
    const byType = Object.entries(stats.events_by_type).filter(([, n]) => n).map(([t, n]) => `${t} ${n}`);
    return [
      h(
        "div",
        { class: "stats" },
        stat(TEXT.totalEvents, stats.total_events),
        stat(TEXT.sessions, stats.unique_sessions),
        stat(TEXT.snapshots, stats.total_snapshots),
        stat(TEXT.earliest, this._when(stats.earliest_event) || "—"),
        stat(TEXT.latest, this._when(stats.latest_event) || "—"),
      ),
      byType.length ? h("div", { class: "meta", style: "margin-top: 8px" }, chips(byType)) : null,
    ].filter(Boolean);
  }

  _historyFilters() {
    const state = this._history;
    const changed = (patch) => {
      Object.assign(state, patch, { offset: 0 });
      this._load();
    };
    const agents = [...new Set([state.agent, ...(this._agents || [])].filter(Boolean))];
    return h(
      "div",
      { class: "filters" },
      select(TEXT.agent, state.agent, [["", TEXT.allAgents], ...agents.map((a) => [a, a])], (agent) =>
        changed({ agent }),
      ),
      select(
        TEXT.eventType,
        state.type,
        [["", TEXT.allEventTypes], ...EVENT_TYPES.map((t) => [t, t.replace("_", " ")])],
        (type) => changed({ type }),
      ),
      field(
        TEXT.day,
        h("input", {
          type: "date",
          ".value": state.day,
          "@change": (ev) => changed({ day: ev.target.value }),
        }),
      ),
    );
  }

  /** The agents the timeline can be filtered by, once the statistics name them. */
  _knowAgents(agents) {
    const known = (this._agents || []).join("\n");
    this._agents = agents;
    if (known === agents.join("\n")) return;
    const agentSelect = this._filters.querySelector("select");
    if (!agentSelect || this._tab !== "history") return;
    const chosen = this._history.agent;
    const values = [...new Set([chosen, ...agents].filter(Boolean))];
    agentSelect.replaceChildren(
      h("option", { value: "", selected: !chosen }, TEXT.allAgents),
      ...values.map((a) => h("option", { value: a, selected: a === chosen }, a)),
    );
  }

  _eventSummary(event) {
    const data = event.event_data && typeof event.event_data === "object" ? event.event_data : {};
    if (data.truncated) return data.truncated.slice(0, 200);
    if (event.event_type === "communication") return `${data.direction === "in" ? "→" : "←"} ${data.text ?? ""}`;
    if (event.event_type === "decision") return `${data.route ?? ""}: ${data.reason ?? ""}`;
    if (event.event_type === "tool_use") return `${data.tool ?? ""}(${JSON.stringify(data.arguments ?? {})})`;
    if (event.event_type === "action") return `${data.intent ?? ""} ${data.name ?? data.target ?? ""}`;
    if (event.event_type === "error") return data.kind ?? JSON.stringify(data);
    return JSON.stringify(data);
  }

  async _eventRow(event) {
    const state = this._history;
    const open = state.open.has(event.event_id);
    const toggle = () => {
      if (open) state.open.delete(event.event_id);
      else state.open.add(event.event_id);
      this._load();
    };
    let turn = null;
    if (open) {
      const result = await this._ws("history/turn", { event_id: event.event_id });
      const depth = new Map();
      turn = h(
        "ol",
        { class: "turn", "aria-label": TEXT.showTurn },
        result.events.map((e) => {
          const level = e.parent_event_id && depth.has(e.parent_event_id) ? depth.get(e.parent_event_id) + 1 : 0;
          depth.set(e.event_id, level);
          return h(
            "li",
            { style: `margin-left: ${level * 16}px` },
            h("div", { class: "event-head" }, h("span", { class: "badge" }, e.event_type), h("span", { class: "meta" }, this._when(e.timestamp))),
            h("div", { class: "content" }, this._eventSummary(e)),
          );
        }),
      );
    }
    return h(
      "li",
      { class: "card event", "data-id": event.event_id },
      h(
        "div",
        { class: "event-head" },
        h("span", { class: "badge" }, event.event_type),
        h("span", { class: "meta" }, `${this._when(event.timestamp)} · ${event.agent_id}`),
      ),
      h("p", { class: "content" }, this._eventSummary(event)),
      button(open ? TEXT.hideTurn : TEXT.showTurn, toggle, { "aria-expanded": String(open) }),
      turn,
    );
  }

  // -- summaries ----------------------------------------------------------------------------

  async _summariesView() {
    const state = this._summaries;
    const result = await this._ws("summaries/groups", { offset: state.offset, limit: PAGE });
    return h(
      "div",
      {},
      h("p", { class: "meta" }, TEXT.groupMode(result.group_mode)),
      result.groups.length ? result.groups.map((group) => this._groupCard(group)) : h("p", { class: "note" }, TEXT.nothing),
      this._pager(state.offset, PAGE, result.total, (offset) => {
        state.offset = offset;
        this._load(true);
      }),
    );
  }

  _summaryTools() {
    const run = async (ev) => {
      const target = ev.currentTarget;
      target.disabled = true;
      await this._act(this._ws("summaries/run", {}), (counts) => TEXT.summarised(counts));
      target.disabled = false;
    };
    return h("div", { class: "filters" }, button(TEXT.summariseNow, run, { class: "primary" }));
  }

  _periodLabel(summary) {
    const start = summary.period_start;
    if (summary.period_type === "daily") return this._day(start);
    if (summary.period_type === "monthly") return start.slice(0, 7);
    return `${this._day(start)} – ${this._day(summary.period_end)}`;
  }

  _groupCard(group) {
    return h(
      "section",
      { class: "card", "aria-label": group.group_id },
      h("h2", {}, group.group_id),
      group.profile ? h("p", { class: "content meta" }, group.profile) : null,
      PERIODS.map((period) =>
        h(
          "div",
          { class: "strip", role: "group", "aria-label": TEXT.periods[period] },
          h("span", { class: "name" }, TEXT.periods[period]),
          group.strips[period].length
            ? group.strips[period].map((summary) =>
                button(this._periodLabel(summary), () => this._openSummary(summary.summary_id), {
                  class: "chip",
                  title: summary.topics.join(", "),
                  "aria-label": `${TEXT.periods[period]} ${this._periodLabel(summary)}: ${TEXT.messages(summary.message_count)}`,
                }),
              )
            : h("span", { class: "meta" }, "—"),
        ),
      ),
    );
  }

  async _openSummary(summaryId) {
    try {
      const { summary } = await this._ws("summaries/get", { summary_id: summaryId });
      this._showDialog(
        `${summary.group_id} · ${summary.period_start} – ${summary.period_end}`,
        h(
          "div",
          { class: "meta" },
          h("span", {}, summary.period_type),
          h("span", {}, TEXT.messages(summary.message_count)),
          summary.extractive ? h("span", {}, TEXT.extractive) : null,
        ),
        h("p", { class: "content" }, summary.summary),
        summary.topics.length ? h("p", {}, `${TEXT.topics}: `, chips(summary.topics)) : null,
        summary.highlights.length
          ? h("div", {}, h("p", {}, TEXT.highlights), h("ul", {}, summary.highlights.map((x) => h("li", {}, x))))
          : null,
      );
    } catch (err) {
      this._showError(err);
    }
  }

  // -- series -------------------------------------------------------------------------------

  async _seriesView() {
    const state = this._series;
    if (state.key) return this._seriesDetail();
    const result = await this._ws("series/list", { offset: state.offset, limit: SERIES_PAGE });
    const rows = result.series.map((series) =>
      h(
        "li",
        { class: "card series", "data-key": series.key },
        h("h2", { class: "mono", style: "font-size: 16px; margin: 0" }, series.key),
        h(
          "div",
          { class: "meta" },
          h("span", {}, TEXT.count(series.count)),
          series.oldest ? h("span", {}, `${this._when(series.oldest)} – ${this._when(series.newest)}`) : null,
          h("span", { class: series.coverage === "full" ? "" : "badge warning" }, TEXT.coverage[series.coverage]),
        ),
        this._coverageBar(series),
        h("div", { class: "actions" }, button(TEXT.open, () => {
          state.key = series.key;
          state.entriesOffset = 0;
          this._load();
        }, { "aria-label": `${TEXT.open} ${series.key}` })),
      ),
    );
    return h(
      "div",
      {},
      rows.length ? h("ul", { class: "rows", "aria-label": TEXT.tabs.series }, rows) : h("p", { class: "note" }, TEXT.nothing),
      this._pager(state.offset, SERIES_PAGE, result.total, (offset) => {
        state.offset = offset;
        this._load(true);
      }),
    );
  }

  /** The range drawn as a bar: fetched windows in one colour, the gaps (exactly those
   * timeseries_query reports) in another. */
  _coverageBar(series) {
    const start = Date.parse(series.range.start);
    const end = Date.parse(series.range.end);
    const span = Math.max(end - start, 1);
    const x = (iso) => Math.min(1000, Math.max(0, ((Date.parse(iso) - start) / span) * 1000));
    const rect = (cls, from, to, what) =>
      s(
        "rect",
        { class: cls, x: x(from).toFixed(2), y: 0, width: Math.max(x(to) - x(from), 1.5).toFixed(2), height: 18 },
        s("title", {}, `${what}: ${this._when(from)} – ${this._when(to)}`),
      );
    return h(
      "div",
      {},
      s(
        "svg",
        {
          class: "coverage",
          viewBox: "0 0 1000 18",
          preserveAspectRatio: "none",
          role: "img",
          "aria-label": TEXT.coverageLabel(series.key, series.gaps.length),
        },
        s("rect", { class: "none", x: 0, y: 0, width: 1000, height: 18 }),
        (series.covered || []).map((w) => rect("covered", w.start, w.end, TEXT.covered)),
        series.gaps.map((g) => rect("gap", g.start, g.end, TEXT.gap)),
      ),
      h(
        "div",
        { class: "legend" },
        h("span", {}, h("i", { class: "covered" }), TEXT.covered),
        h("span", {}, h("i", { class: "gap" }), `${TEXT.gap} (${series.gaps.length})`),
        h("span", {}, `${this._when(series.range.start)} – ${this._when(series.range.end)}`),
      ),
    );
  }

  _chart(detail) {
    const counts = detail.counts;
    const most = Math.max(...counts, 1);
    const width = 1000 / counts.length;
    return s(
      "svg",
      { class: "chart", viewBox: "0 0 1000 120", preserveAspectRatio: "none", role: "img", "aria-label": TEXT.chartLabel(detail.key) },
      s("line", { x1: 0, y1: 119.5, x2: 1000, y2: 119.5 }),
      counts.map((n, i) =>
        s(
          "rect",
          { x: (i * width + 1).toFixed(2), y: (118 - (n / most) * 116).toFixed(2), width: Math.max(width - 2, 1).toFixed(2), height: ((n / most) * 116).toFixed(2) },
          s("title", {}, String(n)),
        ),
      ),
    );
  }

  async _seriesDetail() {
    const state = this._series;
    const detail = await this._ws("series/entries", { key: state.key, offset: state.entriesOffset, limit: PAGE });
    const stampField = detail.timestamp_field;
    const rows = detail.entries.map((entry) =>
      h(
        "tr",
        {},
        h("td", {}, this._when(entry[stampField])),
        h("td", { class: "mono" }, JSON.stringify(entry)),
      ),
    );
    return h(
      "div",
      {},
      h("div", { class: "filters" }, button(TEXT.back, () => {
        state.key = null;
        this._load();
      })),
      h(
        "section",
        { class: "card series-detail", "data-key": detail.key },
        h("h2", { class: "mono", style: "font-size: 16px" }, detail.key),
        h(
          "div",
          { class: "meta" },
          h("span", {}, TEXT.count(detail.count)),
          h("span", { class: detail.coverage === "full" ? "" : "badge warning" }, TEXT.coverage[detail.coverage]),
        ),
        this._coverageBar(detail),
        detail.coverage_approximate ? h("p", { class: "meta" }, TEXT.approximate) : null,
        this._chart(detail),
      ),
      h(
        "section",
        { class: "card", "aria-label": TEXT.entries },
        h("table", {}, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, TEXT.time), h("th", { scope: "col" }, TEXT.entry))), h("tbody", {}, rows)),
        this._pager(state.entriesOffset, PAGE, detail.total, (offset) => {
          state.entriesOffset = offset;
          this._load(true);
        }),
      ),
    );
  }
}

customElements.define("azure-openai-memory-panel", MemoryPanel);
