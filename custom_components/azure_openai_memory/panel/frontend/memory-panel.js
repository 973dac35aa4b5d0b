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
const CONFIDENCES = ["low", "medium", "high"];
// Why a memory went to the archive, as stored ("Forgotten on request (tag)" names the tag
// it was forgotten by; any other reason is a person's own words, shown as they are).
const ARCHIVE_REASONS = {
  edited: "edited",
  superseded: "superseded",
  updated: "updated",
  "Over max_memories_per_type": "cap",
  "Forgotten by voice": "forgotten_by_voice",
  "Handed over: the same words were already there": "handed_over",
};
const FORGOTTEN_REASON = "Forgotten on request";
// Why a turn went to the model, as recorded (English codes of the integration).
const DECISION_REASONS = {
  "no local intent matched": "no_local_match",
  "local intents are off for this agent": "local_off",
  "the Assist pipeline handles local intents itself": "pipeline",
};
// Home Assistant's intents whose actions read as a sentence of their own.
const INTENT_SENTENCES = {
  HassTurnOn: "turned_on",
  HassTurnOff: "turned_off",
  HassToggle: "toggled",
  HassLightSet: "set",
  HassSetPosition: "set",
  HassClimateSetTemperature: "set",
};
const SAVE_ACTIONS = ["created", "reinforced", "superseded", "updated"];
// Quoted words in a sentence are cut here; Details holds them whole.
const QUOTE_CHARS = 300;

// Every word the page shows comes from the catalogue of its user's language (frontend/i18n,
// sent by panel/access over English, so a missing word reads in English): t(key, params)
// is the word at a dotted key with its {placeholders} filled in; a word with plural forms ({"one": …, "other": …})
// takes the form Intl.PluralRules gives for {count}. Numbers are written as the language
// writes them.
let WORDS = {};
let LANGUAGE = "en";

function lookup(key) {
  return key.split(".").reduce((node, part) => (node == null ? undefined : node[part]), WORDS);
}

function t(key, params = {}) {
  let word = lookup(key);
  if (word !== null && typeof word === "object") {
    const count = typeof params.count === "number" ? params.count : NaN;
    let form = "other";
    try {
      form = new Intl.PluralRules(LANGUAGE).select(count);
    } catch (_err) {
      // An unknown language: the general form.
    }
    word = word[form] ?? word.other;
  }
  if (typeof word !== "string") return key;
  return word.replace(/\{(\w+)\}/g, (whole, name) => {
    if (!(name in params)) return whole;
    const value = params[name];
    if (typeof value !== "number") return String(value ?? "");
    try {
      return new Intl.NumberFormat(LANGUAGE).format(value);
    } catch (_err) {
      return String(value);
    }
  });
}

/** A code's label (a memory type, an event type, a reason...), the code itself when the
 * catalogue has none (a value from a newer version, or one a person wrote). */
function label(group, code) {
  const word = lookup(group)?.[code];
  return typeof word === "string" ? word : String(code ?? "").replaceAll("_", " ");
}

function clip(text) {
  const words = String(text ?? "");
  return words.length > QUOTE_CHARS ? `${words.slice(0, QUOTE_CHARS)}…` : words;
}

function archiveReason(reason) {
  const code = ARCHIVE_REASONS[reason];
  if (code) return t(`archive_reasons.${code}`);
  if (typeof reason === "string" && reason.startsWith(FORGOTTEN_REASON))
    return `${t("archive_reasons.forgotten")}${reason.slice(FORGOTTEN_REASON.length)}`;
  return reason;
}

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
pre.details { white-space: pre-wrap; margin: 8px 0 0; padding: 8px; border-radius: 4px; background: var(--secondary-background-color, #f5f5f5); max-height: 320px; overflow: auto; }
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
    this._history = { offset: 0, agent: "", type: "", day: "", open: new Set(), details: new Set() };
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
    else if (this._access && this._language() !== this._asked) this._relocalise();
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
    this._tablist = h("nav", { role: "tablist" });
    this._title = h("h1", {});
    this._menu = h(
      "button",
      {
        class: "menu",
        type: "button",
        hidden: !this._narrow,
        "@click": () =>
          this.dispatchEvent(new Event("hass-toggle-menu", { bubbles: true, composed: true })),
      },
      MENU_ICON(),
    );
    root.replaceChildren(
      h("style", {}, STYLE),
      h("header", { class: "toolbar" }, this._menu, this._title),
      this._tablist,
      this._view,
      this._dialog,
    );
    try {
      await this._hass.loadBackendTranslation?.("exceptions", DOMAIN);
    } catch (_err) {
      // Without translations an error shows Home Assistant's own message.
    }
    if (!(await this._fetchAccess())) return;
    const wanted = (location.hash || "").slice(1);
    if (TABS.includes(wanted)) this._tab = wanted;
    this._renderAll();
  }

  /** The language the user chose in Home Assistant (their profile, else the browser's). */
  _language() {
    return this._hass?.locale?.language || this._hass?.language || "en";
  }

  /** Who the user is, their tabs and the words of their language; false when refused. */
  async _fetchAccess() {
    const language = this._language();
    this._asked = language;
    try {
      const access = await this._ws("panel/access", { language });
      WORDS = access.text.words;
      LANGUAGE = access.text.language;
      this._access = access;
      return true;
    } catch (err) {
      this._showError(err);
      return false;
    }
  }

  /** The user chose another language: the page again, in its words. */
  async _relocalise() {
    if (await this._fetchAccess()) {
      this._say("");
      this._renderAll();
    }
  }

  _renderAll() {
    this._title.textContent = t("title");
    this._menu.setAttribute("aria-label", t("menu"));
    this._menu.title = t("menu");
    this._tablist.setAttribute("aria-label", t("tab_list"));
    this.lang = LANGUAGE;
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
    // Before the words have come (panel/access refused), the message alone.
    const message = this._message(err);
    this._status.textContent = lookup("failed") ? t("failed", { message }) : message;
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
          t(`tabs.${tab}`),
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
    const made = filters ? filters() : null;
    this._filters.replaceChildren(...(made ? [made] : []));
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
      body.replaceChildren(h("p", { class: "note" }, t("loading")));
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
        h("p", { class: "note" }, err?.code === "unauthorized" ? t("admin_only") : ""),
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
      button(t("previous"), () => go(Math.max(offset - size, 0)), { disabled: offset === 0 }),
      h("span", {}, t("showing", { first, last, total: total === null ? "…" : total })),
      button(t("next"), () => go(offset + size), {
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
          button(t("memories.cancel"), () => done(false)),
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
      h("div", { class: "actions" }, button(t("conversations.close"), () => dialog.close(), { class: "primary" })),
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
      rows.length ? h("ul", { class: "rows", "aria-label": t("tabs.memories") }, rows) : h("p", { class: "note" }, t("nothing")),
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
        h("span", { class: "label" }, t("memories.search")),
        h("input", {
          type: "search",
          id: "memory-search",
          placeholder: t("memories.search_hint"),
          autocomplete: "off",
          ".value": state.query,
          "@input": (ev) => changed({ query: ev.target.value }, false),
        }),
      ),
      select(t("memories.whose"), state.scope, this._whoseOptions(), (scope) => changed({ scope })),
      select(
        t("memories.type"),
        state.type,
        [["", t("memories.all_types")], ...MEMORY_TYPES.map((type) => [type, label("memory_types", type)])],
        (type) => changed({ type }),
      ),
      field(
        t("memories.tag"),
        h("input", {
          type: "text",
          placeholder: t("memories.tag_hint"),
          autocomplete: "off",
          ".value": state.tag,
          "@change": (ev) => changed({ tag: ev.target.value }),
        }),
      ),
      select(
        t("memories.confidence"),
        state.confidence,
        [["", t("memories.any_confidence")], ...CONFIDENCES.map((c) => [c, label("confidences", c)])],
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
        t("memories.archived"),
      ),
    );
  }

  // The people Home Assistant knows, by their own person id (the entity's `id`
  // attribute, never the entity id a new person may get again): their names.
  _people() {
    return Object.values(this._hass?.states || {})
      .filter((state) => state.entity_id.startsWith("person.") && state.attributes?.id)
      .map((state) => [
        String(state.attributes.id),
        state.attributes?.friendly_name || state.entity_id,
      ])
      .sort((a, b) => a[1].localeCompare(b[1]));
  }

  // Administrators may list any person's memories; anyone else the household's and their own.
  _whoseOptions() {
    const user = this._access?.user || {};
    const options = [["", t("memories.everyone")], ["household", t("memories.household")]];
    if (user.person_id) options.push(["private", t("memories.mine")]);
    if (user.is_admin)
      for (const [id, name] of this._people())
        if (id !== user.person_id) options.push([`person:${id}`, name]);
    return options;
  }

  _whose(scope) {
    if (scope === "household") return t("memories.household");
    const person = scope?.startsWith("person:") ? scope.slice("person:".length) : null;
    const name = person ? new Map(this._people()).get(person) : null;
    return name || t("memories.private");
  }

  _memoryRow(memory) {
    const actions = new Set(memory.actions || []);
    const meta = h(
      "div",
      { class: "meta" },
      memory.pinned && !memory.archived ? h("span", { class: "badge" }, t("memories.pinned")) : null,
      h("span", { class: "whose" }, t("memories.whose_label", { name: this._whose(memory.scope) })),
      h("span", {}, label("memory_types", memory.type)),
      h("span", {}, label("confidences", memory.confidence)),
      h("span", {}, t("memories.occurrences", { count: memory.occurrences })),
      h("span", {}, t("memories.updated", { when: this._when(memory.updated_at) })),
      memory.source
        ? h("span", {}, t("memories.source", { source: `${label("sources", memory.source)}${memory.source_reference ? ` (${memory.source_reference})` : ""}` }))
        : null,
      memory.provenance ? h("span", { class: "provenance" }, this._provenance(memory.provenance)) : null,
      memory.tags?.length ? chips(memory.tags) : null,
    );
    const archivedNote = memory.archived
      ? h(
          "div",
          { class: "meta" },
          h("span", { class: "badge warning" }, t("memories.archived_badge")),
          h("span", {}, `${archiveReason(memory.reason)} · ${this._when(memory.archived_at)}`),
          memory.superseded_by_content
            ? h("span", {}, t("memories.replaced_by", { content: memory.superseded_by_content }))
            : null,
        )
      : null;
    if (this._editing === memory.id) return this._memoryEditor(memory);
    const controls = [];
    if (actions.has("edit"))
      controls.push(
        button(t("memories.edit"), () => {
          this._editing = memory.id;
          this._load();
        }, { "aria-label": `${t("memories.edit")}: ${memory.content.slice(0, 60)}` }),
      );
    if (actions.has("pin"))
      controls.push(
        button(memory.pinned ? t("memories.unpin") : t("memories.pin"), () => this._pin(memory), {
          "aria-pressed": String(!!memory.pinned),
          "aria-label": `${t("memories.pin")}: ${memory.content.slice(0, 60)}`,
        }),
      );
    if (actions.has("forget"))
      controls.push(button(t("memories.forget"), () => this._forget(memory), { "aria-label": `${t("memories.forget")}: ${memory.content.slice(0, 60)}` }));
    if (actions.has("restore"))
      controls.push(button(t("memories.restore"), () => this._restore(memory), { "aria-label": `${t("memories.restore")}: ${memory.content.slice(0, 60)}` }));
    if (actions.has("erase"))
      controls.push(
        button(t("memories.erase"), () => this._erase(memory), {
          class: "danger",
          "aria-label": `${t("memories.erase")}: ${memory.content.slice(0, 60)}`,
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
        this._say(result.action === "unchanged" ? t("memories.unchanged") : t("memories.edited"));
        this._load();
      } catch (err) {
        this._showError(err);
      }
    };
    queueMicrotask(() => content.focus());
    return h(
      "li",
      { class: "card memory editing", "data-id": memory.id },
      field(t("memories.content"), content),
      field(t("memories.tags"), tags),
      h(
        "div",
        { class: "actions" },
        button(t("memories.save"), save, { class: "primary" }),
        button(t("memories.cancel"), () => {
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
      pinned ? t("memories.pinned_done") : t("memories.unpinned_done"),
    );
  }

  _forget(memory) {
    this._act(this._ws("memories/forget", { memory_id: memory.id }), t("memories.forgotten"));
  }

  _restore(memory) {
    this._act(this._ws("memories/restore", { memory_id: memory.id }), t("memories.restored"));
  }

  async _erase(memory) {
    if (!(await this._confirm(t("memories.erase_title"), `“${memory.content}” — ${t("memories.erase_body")}`, t("memories.erase_confirm"))))
      return;
    this._act(this._ws("memories/erase", { memory_id: memory.id }), (result) =>
      (result.history_events_erased === null ? t("memories.erased_unknown") : t("memories.erased", { count: result.history_events_erased })),
    );
  }

  // -- conversations ------------------------------------------------------------------------

  async _conversationsView() {
    const state = this._conversations;
    const result = await this._ws("conversations/list", {
      offset: state.offset,
      limit: CONVERSATION_PAGE,
    });
    if (!result.agents.length) return h("p", { class: "note" }, t("nothing"));
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
      const title = conversationId ? t("conversations.reset_title") : t("conversations.reset_all_title");
      if (!(await this._confirm(title, t("conversations.reset_body"), t("conversations.reset")))) return;
      const fields = conversationId ? { ...where, conversation_id: conversationId } : where;
      this._act(this._ws("conversations/reset", fields), (r) => t("conversations.reset_done", { count: r.reset }));
    };
    return h(
      "section",
      { class: "card", "aria-label": `${t("history.agent")} ${agent.title}` },
      h("h2", {}, agent.title),
      h(
        "div",
        { class: "meta" },
        h("span", { class: "mono" }, agent.agent_id),
        h("span", {}, t("conversations.messages", { count: agent.totals.messages })),
        h("span", {}, t("conversations.tokens", { used: agent.totals.tokens, budget: agent.max_tokens })),
      ),
      agent.conversations.length
        ? h("ul", { class: "rows" }, agent.conversations.map((c) => this._conversationRow(agent, c, reset)))
        : h("p", { class: "note" }, t("nothing")),
      admin && agent.total ? h("div", { class: "actions" }, button(t("conversations.reset_all"), () => reset(null), { class: "danger" })) : null,
    );
  }

  _conversationRow(agent, conversation, reset) {
    const used = conversation.current_tokens;
    const budget = conversation.max_tokens || agent.max_tokens;
    const percent = Math.min(100, budget ? (100 * used) / budget : 0);
    const label = t("conversations.tokens", { used, budget });
    const tags = Object.entries(conversation.tag_distribution || {}).map(([t, n]) => `${t} ${n}`);
    return h(
      "li",
      { class: "conversation", style: "padding: 8px 0; border-top: 1px solid var(--divider-color, #ddd)" },
      h(
        "div",
        { class: "meta" },
        h("span", { class: "mono" }, conversation.conversation_id),
        h("span", {}, t("conversations.messages", { count: conversation.message_count })),
        h("span", {}, label),
        h("span", {}, t("conversations.last_activity", { when: this._when(conversation.last_activity) })),
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
        button(t("conversations.open"), () => this._openConversation(agent, conversation.conversation_id, 0), {
          "aria-label": `${t("conversations.open")} ${conversation.conversation_id}`,
        }),
        this._access?.user?.is_admin
          ? button(t("conversations.reset"), () => reset(conversation.conversation_id), {
              class: "danger",
              "aria-label": `${t("conversations.reset")} ${conversation.conversation_id}`,
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
          h("div", { class: "meta" }, h("span", { class: "role" }, label("roles", m.role)), h("span", {}, this._when(m.timestamp)), h("span", {}, t("conversations.token_count", { count: m.token_count }))),
          m.content ? h("p", { class: "content" }, m.content) : null,
          m.tool_calls.map((call) => h("p", { class: "mono" }, `${call.name}(${JSON.stringify(call.arguments)})`)),
        ),
      );
      this._showDialog(
        `${t("conversations.conversation")} ${conversationId}`,
        h("p", { class: "meta" }, t("conversations.tokens", { used: read.current_tokens, budget: read.max_tokens })),
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
      { class: "card", "aria-label": t("history.total_events"), "aria-busy": "true" },
      h("p", { class: "note" }, t("loading")),
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
        range.textContent = t("showing", { first: shown ? state.offset + 1 : 0, last: state.offset + shown, total });
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
      events.length ? h("ul", { class: "rows", "aria-label": t("tabs.history") }, events) : h("p", { class: "note" }, t("nothing")),
      pager,
    );
  }

  _provenance(p) {
    return [
      t("memories.from", { source: label("origins", p.source) }),
      label("authorities", p.authority),
      p.channel ? t("memories.via", { channel: p.channel }) : null,
    ]
      .filter(Boolean)
      .join(" · ");
  }

  _statsContent(stats) {
    const stat = (label, value) => h("div", { class: "stat" }, h("b", {}, value), label);
    const byType = Object.entries(stats.events_by_type)
      .filter(([, n]) => n)
      .map(([type, n]) => `${label("event_types", type)} ${n}`);
    return [
      h(
        "div",
        { class: "stats" },
        stat(t("history.total_events"), stats.total_events),
        stat(t("history.sessions"), stats.unique_sessions),
        stat(t("history.snapshots"), stats.total_snapshots),
        stat(t("history.earliest"), this._when(stats.earliest_event) || "—"),
        stat(t("history.latest"), this._when(stats.latest_event) || "—"),
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
      select(t("history.agent"), state.agent, [["", t("history.all_agents")], ...agents.map((a) => [a, a])], (agent) =>
        changed({ agent }),
      ),
      select(
        t("history.event_type"),
        state.type,
        [["", t("history.all_event_types")], ...EVENT_TYPES.map((type) => [type, label("event_types", type)])],
        (type) => changed({ type }),
      ),
      field(
        t("history.day"),
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
      h("option", { value: "", selected: !chosen }, t("history.all_agents")),
      ...values.map((a) => h("option", { value: a, selected: a === chosen }, a)),
    );
  }

  /** An event's data as stored; of a row whose data was cut, the short fields the
   * server kept of it (`brief`). */
  _eventData(event) {
    const data = event.event_data && typeof event.event_data === "object" ? event.event_data : {};
    return "truncated" in data ? event.brief || {} : data;
  }

  /** A person's name by their person id (null: nobody known, or not a person here). */
  _personName(personId) {
    return personId ? new Map(this._people()).get(String(personId)) || null : null;
  }

  /** Where a question was asked: the area of its satellite, else of its device. */
  _area(data) {
    const hass = this._hass;
    const entity = data.satellite_id ? hass.entities?.[data.satellite_id] : null;
    const deviceId = entity?.device_id || data.device_id;
    const areaId = entity?.area_id || (deviceId ? hass.devices?.[deviceId]?.area_id : null);
    return (areaId && hass.areas?.[areaId]?.name) || null;
  }

  /** What happened, as a sentence in the user's language. */
  _sentence(event) {
    const data = this._eventData(event);
    const type = event.event_type;
    const person = this._personName(data.person_id);
    if (type === "communication") {
      const text = clip(data.text);
      if (data.direction === "in") {
        const who = person || t("events.someone");
        const area = this._area(data);
        return area
          ? t("events.asked_in", { person: who, area, text })
          : t("events.asked", { person: who, text });
      }
      const said = data.late ? "events.answered_late" : "events.answered";
      return person ? t(`${said}_person`, { person, text }) : t(said, { text });
    }
    if (type === "decision") {
      if (data.route === "local") return t("events.local");
      const code = DECISION_REASONS[data.reason];
      return t("events.model", { reason: code ? t(`events.reasons.${code}`) : data.reason ?? "" });
    }
    if (type === "tool_use") return this._toolSentence(data);
    if (type === "action") {
      const name = data.name || data.target || "";
      const done = INTENT_SENTENCES[data.intent];
      return done ? t(`events.${done}`, { name }) : t("events.acted", { intent: data.intent ?? "", name });
    }
    if (type === "error") return t("events.turn_failed", { kind: label("error_kinds", data.kind) });
    if (type === "state_change") return this._changeSentence(event.agent_id, data);
    return t("events.generic", { type: label("event_types", type) });
  }

  _toolSentence(data) {
    const tool = String(data.tool ?? "");
    const args = data.arguments && typeof data.arguments === "object" ? data.arguments : {};
    const result = data.result;
    if (result && typeof result === "object" && result.error)
      return t("events.tool_failed", { tool, error: clip(result.error_text || result.error) });
    if (tool === "remember") return t("events.remembered", { content: clip(args.content) });
    if (tool === "recall")
      return args.query ? t("events.recalled", { query: clip(args.query) }) : t("events.recalled_all");
    if (tool === "forget") return t("events.forgot", { about: clip(args.about) });
    if (tool === "past_talk")
      return args.when ? t("events.past_talk", { when: clip(args.when) }) : t("events.past_talk_all");
    if (tool === "series_lookup") return t("events.series_lookup", { key: args.key ?? "" });
    return t("events.tool", { tool });
  }

  /** A change made by a service call or on this panel: the service is the event's agent
   * (azure_openai_memory.<service>), an incognito switch the agent's own. */
  _changeSentence(agentId, data) {
    const service = String(agentId ?? "").startsWith(`${DOMAIN}.`) ? agentId.slice(DOMAIN.length + 1) : null;
    const n = (value) => (typeof value === "number" ? value : 0);
    if (data.incognito)
      return typeof data.minutes === "number"
        ? t("events.incognito", { minutes: data.minutes })
        : t("events.incognito_open");
    switch (service) {
      case "timeseries_merge":
        return t("events.merged", { count: n(data.added), key: data.key ?? "", total: n(data.total_count) });
      case "timeseries_cleanup":
        return t("events.cleaned_series", { count: n(data.removed), key: data.key ?? "", kept: n(data.kept) });
      case "memory_save":
        return t(`events.memory_${SAVE_ACTIONS.includes(data.action) ? data.action : "created"}`);
      case "memory_edit":
        return t("events.memory_edited");
      case "memory_pin":
        return t(data.pinned ? "events.memory_pinned" : "events.memory_unpinned");
      case "memory_forget":
        return data.erase
          ? t("events.memory_erased", { count: n(data.erased) })
          : t("events.memory_forgotten", { count: Array.isArray(data.ids) ? data.ids.length : 0 });
      case "memory_restore":
        return t("events.memory_restored");
      case "memory_import":
        return t("events.memory_imported", { count: n(data.added), conflicts: n(data.conflicts) });
      case "memory_cleanup":
        return t("events.memory_cleaned", { count: n(data.deleted) });
      case "conversation_reset":
        return t("events.conversations_reset", { count: n(data.reset) });
      default:
        return t("events.changed", { service: service || agentId || "" });
    }
  }

  /** The raw data behind a row, as stored (what history_query returns). */
  _details(event) {
    const data = event.event_data;
    const text = data && typeof data === "object" && "truncated" in data ? data.truncated : JSON.stringify(data, null, 2);
    return h("pre", { class: "mono details" }, text);
  }

  async _eventRow(event) {
    const state = this._history;
    const open = state.open.has(event.event_id);
    const detailed = state.details.has(event.event_id);
    const flip = (set) => () => {
      if (set.has(event.event_id)) set.delete(event.event_id);
      else set.add(event.event_id);
      this._load();
    };
    let turn = null;
    if (open && event.in_turn) {
      const result = await this._ws("history/turn", { event_id: event.event_id });
      const depth = new Map();
      turn = h(
        "ol",
        { class: "turn", "aria-label": t("history.show_turn") },
        result.events.map((e) => {
          const level = e.parent_event_id && depth.has(e.parent_event_id) ? depth.get(e.parent_event_id) + 1 : 0;
          depth.set(e.event_id, level);
          return h(
            "li",
            { style: `margin-left: ${level * 16}px` },
            h(
              "div",
              { class: "event-head" },
              h("span", { class: "badge", "data-type": e.event_type }, label("event_types", e.event_type)),
              h("span", { class: "meta" }, this._when(e.timestamp)),
            ),
            h("div", { class: "content" }, this._sentence(e)),
          );
        }),
      );
    }
    const detailsId = `details-${event.event_id}`;
    return h(
      "li",
      { class: "card event", "data-id": event.event_id, "data-type": event.event_type },
      h(
        "div",
        { class: "event-head" },
        h("span", { class: "badge" }, label("event_types", event.event_type)),
        h("span", { class: "meta" }, `${this._when(event.timestamp)} · ${event.agent_id}`),
      ),
      h("p", { class: "content sentence" }, this._sentence(event)),
      h(
        "div",
        { class: "actions" },
        button(detailed ? t("history.hide_details") : t("history.details"), flip(state.details), {
          class: "details-toggle",
          "aria-expanded": String(detailed),
          "aria-controls": detailsId,
        }),
        event.in_turn
          ? button(open ? t("history.hide_turn") : t("history.show_turn"), flip(state.open), {
              class: "turn-toggle",
              "aria-expanded": String(open),
            })
          : null,
      ),
      detailed ? h("div", { id: detailsId }, this._details(event)) : null,
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
      h("p", { class: "meta" }, t("summaries.group_mode", { mode: label("summaries.group_modes", result.group_mode) })),
      result.groups.length ? result.groups.map((group) => this._groupCard(group)) : h("p", { class: "note" }, t("nothing")),
      this._pager(state.offset, PAGE, result.total, (offset) => {
        state.offset = offset;
        this._load(true);
      }),
    );
  }

  /** Summarising now runs over every person's talk: an administrator's to do. */
  _summaryTools() {
    if (!this._access?.user?.is_admin) return null;
    const run = async (ev) => {
      const target = ev.currentTarget;
      target.disabled = true;
      await this._act(this._ws("summaries/run", {}), (counts) => t("summaries.summarised", counts));
      target.disabled = false;
    };
    return h("div", { class: "filters" }, button(t("summaries.summarise_now"), run, { class: "primary" }));
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
          { class: "strip", role: "group", "aria-label": t(`summaries.periods.${period}`) },
          h("span", { class: "name" }, t(`summaries.periods.${period}`)),
          group.strips[period].length
            ? group.strips[period].map((summary) =>
                button(this._periodLabel(summary), () => this._openSummary(summary.summary_id), {
                  class: "chip",
                  title: summary.topics.join(", "),
                  "aria-label": `${t(`summaries.periods.${period}`)} ${this._periodLabel(summary)}: ${t("conversations.messages", { count: summary.message_count })}`,
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
          h("span", {}, label("summaries.period_types", summary.period_type)),
          h("span", {}, t("conversations.messages", { count: summary.message_count })),
          summary.extractive ? h("span", {}, t("summaries.extractive")) : null,
        ),
        h("p", { class: "content" }, summary.summary),
        summary.topics.length ? h("p", {}, `${t("summaries.topics")}: `, chips(summary.topics)) : null,
        summary.highlights.length
          ? h("div", {}, h("p", {}, t("summaries.highlights")), h("ul", {}, summary.highlights.map((x) => h("li", {}, x))))
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
          h("span", {}, t("series.count", { count: series.count })),
          series.oldest ? h("span", {}, `${this._when(series.oldest)} – ${this._when(series.newest)}`) : null,
          h("span", { class: series.coverage === "full" ? "" : "badge warning" }, t(`series.coverage.${series.coverage}`)),
        ),
        this._coverageBar(series),
        h("div", { class: "actions" }, button(t("conversations.open"), () => {
          state.key = series.key;
          state.entriesOffset = 0;
          this._load();
        }, { "aria-label": `${t("conversations.open")} ${series.key}` })),
      ),
    );
    return h(
      "div",
      {},
      rows.length ? h("ul", { class: "rows", "aria-label": t("tabs.series") }, rows) : h("p", { class: "note" }, t("nothing")),
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
          "aria-label": t("series.coverage_label", { key: series.key, count: series.gaps.length }),
        },
        s("rect", { class: "none", x: 0, y: 0, width: 1000, height: 18 }),
        (series.covered || []).map((w) => rect("covered", w.start, w.end, t("series.covered"))),
        series.gaps.map((g) => rect("gap", g.start, g.end, t("series.gap"))),
      ),
      h(
        "div",
        { class: "legend" },
        h("span", {}, h("i", { class: "covered" }), t("series.covered")),
        h("span", {}, h("i", { class: "gap" }), `${t("series.gap")} (${series.gaps.length})`),
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
      { class: "chart", viewBox: "0 0 1000 120", preserveAspectRatio: "none", role: "img", "aria-label": t("series.chart_label", { key: detail.key }) },
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
      h("div", { class: "filters" }, button(t("series.back"), () => {
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
          h("span", {}, t("series.count", { count: detail.count })),
          h("span", { class: detail.coverage === "full" ? "" : "badge warning" }, t(`series.coverage.${detail.coverage}`)),
        ),
        this._coverageBar(detail),
        detail.coverage_approximate ? h("p", { class: "meta" }, t("series.approximate")) : null,
        this._chart(detail),
      ),
      h(
        "section",
        { class: "card", "aria-label": t("series.entries") },
        h("table", {}, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, t("series.time")), h("th", { scope: "col" }, t("series.entry")))), h("tbody", {}, rows)),
        this._pager(state.entriesOffset, PAGE, detail.total, (offset) => {
          state.entriesOffset = offset;
          this._load(true);
        }),
      ),
    );
  }
}

customElements.define("azure-openai-memory-panel", MemoryPanel);
