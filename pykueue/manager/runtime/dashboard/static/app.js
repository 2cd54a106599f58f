// The pykueue dashboard: plain JavaScript, no build step, no dependencies.
//
// The server sends a small "change" event (a revision and the totals) whenever the queueing
// core changed; the page then refetches only what it shows (one page of each list), never
// reloading. The browser holds only an opaque session id, in an HttpOnly cookie the server
// set at sign-in (/login); this script never sees it, nor the token.
"use strict";

const PAGES = { tree: 0, pending: 0, admitted: 0, lq: 0 };
let shownRevision = 0;
let latestRevision = 0;
let loading = null;
let reloadAgain = false;

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "style") Object.assign(el.style, v);  // CSSOM: allowed by the page's CSP
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function api(path) {
  const r = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } });
  let body = null;
  try { body = await r.json(); } catch (_) { body = null; }
  if (!r.ok) throw new ApiError(r.status, (body && body.error) || r.statusText);
  return body;
}

function workloadLink(key) {
  const [ns, name] = key.split("/");
  return h("a", { href: `#/workload/${encodeURIComponent(ns)}/${encodeURIComponent(name)}` }, key);
}

function pager(data, key) {
  if (data.pages <= 1) return h("div", { class: "pager" }, `${data.total} in all`);
  const go = (p) => () => { PAGES[key] = p; refresh(); };
  return h("div", { class: "pager" },
    h("button", { onclick: go(data.page - 1), disabled: data.page === 0 }, "‹ previous"),
    `page ${data.page + 1} of ${data.pages} (${data.total} in all)`,
    h("button", { onclick: go(data.page + 1), disabled: data.page + 1 >= data.pages }, "next ›"));
}

function usageBar(row) {
  const pct = Math.min(100, row.usedPercent);
  const cls = row.usedPercent > 100 ? "bar borrow" : row.usedPercent >= 100 ? "bar full" : "bar";
  return h("span", { class: cls, title: `${row.usedPercent}% of nominal` }, h("i", { style: { width: `${pct}%` } }));
}

function resourcesCell(resources) {
  return h("td", {}, resources.map((r) => h("div", { class: "res" },
    usageBar(r),
    // A cohort's usage is what its queues use of the quota its subtree pools (lending limits
    // keep the rest private); a queue's is measured against its nominal quota.
    r.subtree !== undefined ? `${r.flavor}/${r.resource}: ${r.used} of ${r.subtree} pooled`
      : `${r.flavor}/${r.resource}: ${r.used} of ${r.nominal}`,
    r.borrowed !== "0" ? h("span", { class: "tier" }, ` borrowing ${r.borrowed}`) : "",
    r.borrowingLimit !== undefined ? h("span", { class: "muted" }, ` · borrow ≤ ${r.borrowingLimit}`) : "",
    r.lendingLimit !== undefined ? h("span", { class: "muted" }, ` · lend ≤ ${r.lendingLimit}`) : "")));
}

function treeSection(data) {
  const rows = data.items.map((n) => {
    const indent = { style: { paddingLeft: `${0.6 + 1.4 * n.depth}em` } };
    if (n.kind === "Cohort") {
      return h("tr", { class: "cohort", "data-cohort": n.name },
        h("td", indent, `Cohort ${n.name}`), h("td", { class: "num" }), h("td", { class: "num" }),
        resourcesCell(n.resources), h("td", { class: "muted" }, `${n.clusterQueues} queues`));
    }
    return h("tr", { "data-cq": n.name },
      h("td", indent, n.name),
      h("td", { class: "num pending" }, n.pending),
      h("td", { class: "num admitted" }, n.admitted),
      resourcesCell(n.resources),
      h("td", {}, n.active ? "active" : h("span", { class: "error" }, `inactive: ${n.inactiveReason}`)));
  });
  return h("section", { id: "clusterqueues" }, h("h2", {}, "Cohorts and ClusterQueues"),
    h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "name"), h("th", {}, "pending"),
      h("th", {}, "admitted"), h("th", {}, "usage of nominal quota per flavor and resource"), h("th", {}, "state"))),
      h("tbody", {}, rows)), pager(data, "tree"));
}

function pendingSection(data) {
  const rows = data.items.map((w) => h("tr", { "data-workload": w.key },
    h("td", {}, workloadLink(w.key)), h("td", {}, w.clusterQueue || "-"),
    h("td", { class: "num" }, w.positionInClusterQueue ?? "-"),
    h("td", { class: "num" }, w.positionInLocalQueue ?? "-"), h("td", { class: "num" }, w.priority),
    h("td", {}, h("span", { class: "tier" }, w.tier), " ", h("span", { class: "muted" }, w.message))));
  return h("section", { id: "pending" }, h("h2", {}, "Pending workloads"),
    h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "workload"), h("th", {}, "ClusterQueue"),
      h("th", {}, "position"), h("th", {}, "in LocalQueue"), h("th", {}, "priority"), h("th", {}, "why it waits"))),
      h("tbody", {}, rows)), pager(data, "pending"));
}

function flavorsText(flavors) {
  return Object.entries(flavors || {}).map(([ps, m]) =>
    `${ps}: ${Object.entries(m).map(([r, f]) => `${r}→${f}`).join(", ")}`).join("; ");
}

function admittedSection(data) {
  const rows = data.items.map((w) => h("tr", { "data-workload": w.key },
    h("td", {}, workloadLink(w.key)), h("td", {}, w.clusterQueue), h("td", { class: "status" }, w.status),
    h("td", {}, flavorsText(w.flavors)), h("td", { class: "num" }, w.priority)));
  return h("section", { id: "admitted" }, h("h2", {}, "Admitted workloads"),
    h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "workload"), h("th", {}, "ClusterQueue"),
      h("th", {}, "status"), h("th", {}, "flavors"), h("th", {}, "priority"))), h("tbody", {}, rows)),
    pager(data, "admitted"));
}

function localQueuesSection(data) {
  const rows = data.items.map((q) => h("tr", { "data-lq": `${q.namespace}/${q.name}` },
    h("td", {}, `${q.namespace}/${q.name}`), h("td", {}, q.clusterQueue),
    h("td", { class: "num" }, q.pending), h("td", { class: "num" }, q.admitted),
    h("td", {}, q.stopPolicy === "None" ? "active" : q.stopPolicy)));
  return h("section", { id: "localqueues" }, h("h2", {}, "LocalQueues"),
    h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "LocalQueue"), h("th", {}, "ClusterQueue"),
      h("th", {}, "pending"), h("th", {}, "admitted"), h("th", {}, "state"))), h("tbody", {}, rows)),
    pager(data, "lq"));
}

function failedSection(id, title, e) {
  const msg = e.status === 403 ? `Not allowed: ${e.message}` : `Could not load: ${e.message}`;
  return h("section", { id }, h("h2", {}, title), h("p", { class: "error" }, msg));
}

async function section(id, title, path, render) {
  try { const data = await api(path); return { revision: data.revision, node: render(data) }; }
  catch (e) { if (e.status === 401) throw e; return { revision: 0, node: failedSection(id, title, e) }; }
}

// Each section stands alone: who may only see a namespace still gets its workloads.
async function queuesView(namespace) {
  const ns = namespace ? `&namespace=${encodeURIComponent(namespace)}` : "";
  const parts = await Promise.all([
    namespace ? null : section("clusterqueues", "Cohorts and ClusterQueues", `/api/clusterqueues?page=${PAGES.tree}`, treeSection),
    section("pending", "Pending workloads", `/api/workloads?state=pending&page=${PAGES.pending}${ns}`, pendingSection),
    section("admitted", "Admitted workloads", `/api/workloads?state=admitted&page=${PAGES.admitted}${ns}`, admittedSection),
    section("localqueues", "LocalQueues", `/api/localqueues?page=${PAGES.lq}${ns}`, localQueuesSection)]);
  const shown = parts.filter((p) => p !== null);
  const heading = namespace ? [h("p", { class: "muted" }, `Namespace ${namespace} only · `, h("a", { href: "#/" }, "all namespaces"))] : [];
  return { revision: Math.max(...shown.map((p) => p.revision)), nodes: [...heading, ...shown.map((p) => p.node)] };
}

function domainsBox(ta) {
  if (!ta) return h("span", { class: "muted" }, "none");
  return h("div", {}, h("div", { class: "muted" }, ta.levels.join(" / ")),
    h("div", { class: "domains" }, ta.domains.map((d) => h("div", { class: "domain placed" },
      h("h4", {}, d.values.join(" / ")), `${d.count} pod${d.count === 1 ? "" : "s"}`))));
}

function explanationSection(ex) {
  const parts = [h("h2", {}, "Why it waits")];
  if (ex.position) parts.push(h("p", {}, `Position ${ex.position} of ${ex.queueLength} pending in ${ex.clusterQueue}.`));
  for (const [name, ps] of Object.entries(ex.podSets || {})) {
    const rows = [];
    for (const [flavor, resources] of Object.entries(ps.flavors || {})) {
      for (const [res, n] of Object.entries(resources)) {
        rows.push(h("tr", {}, h("td", {}, `${flavor}/${res}`), h("td", { class: "num" }, n.requested),
          h("td", { class: "num" }, n.nominal), h("td", { class: "num" }, n.used),
          h("td", { class: "num" }, n.borrowable), h("td", { class: "num" }, n.free), h("td", { class: "num" }, n.needed ?? "")));
      }
    }
    parts.push(h("h3", {}, `PodSet ${name}: ${ps.count} pod(s)`),
      h("table", {}, h("thead", {}, h("tr", {}, ["flavor/resource", "requested", "nominal", "used", "borrowable", "free", "needed"]
        .map((t) => h("th", {}, t)))), h("tbody", {}, rows)),
      h("ul", {}, (ps.verdicts || []).map((v) => h("li", {}, v))));
    for (const [flavor, closest] of Object.entries(ps.closestDomains || {})) {
      parts.push(h("p", {}, `Closest ${closest.levels.join("/")} domains in ${flavor}: `,
        closest.domains.map((d) => `${d.values.join("/")} (${d.fit} of ${ps.count})`).join(", ")));
    }
  }
  const candidates = Object.entries(ex.preemptionCandidates || {});
  parts.push(h("p", {}, candidates.length
    ? ["Could preempt: ", candidates.map(([f, ws]) => `${f}: ${ws.join(", ")}`).join("; ")]
    : "Could preempt: none under the ClusterQueue's preemption policy."));
  if (ex.topology) parts.push(h("p", {}, `Topology: ${ex.topology}`));
  return h("section", { id: "explanation" }, parts);
}

async function workloadView(ns, name) {
  const w = await api(`/api/workloads/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`);
  const nodes = [h("section", { id: "workload", "data-status": w.status },
    h("h2", {}, `Workload ${w.key}`),
    h("p", {}, h("b", { class: "status" }, w.status), ` in ClusterQueue ${w.clusterQueue || "-"} via LocalQueue ${w.localQueue || "-"}`,
      `, priority ${w.priority}`, w.owner ? `, owner ${w.owner}` : "", `, created ${w.created}`),
    w.status === "Pending" ? h("p", { id: "reason" }, h("span", { class: "tier" }, w.tier), " ", w.message,
      w.positionInClusterQueue ? ` (position ${w.positionInClusterQueue} in the ClusterQueue)` : "") : null,
    h("h3", {}, "PodSets"),
    h("ul", {}, w.podSets.map((ps) => h("li", {}, `${ps.name}: ${ps.count} × `,
      Object.entries(ps.requests).map(([r, q]) => `${r}=${q}`).join(", ")))),
    w.evictions.length ? h("p", {}, `Evictions: ${w.evictions.join(", ")}`) : null)];
  if (w.admission) {
    nodes.push(h("section", { id: "admission" }, h("h2", {}, "Admission"),
      h("p", {}, `Reserved ${w.admission.reservedAt || "-"}, admitted ${w.admission.admittedAt || "-"}`),
      w.admission.podSets.map((ps) => h("div", {}, h("h3", {}, `PodSet ${ps.name}: ${ps.count} pod(s)`),
        h("p", {}, `flavors: ${Object.entries(ps.flavors).map(([r, f]) => `${r}→${f}`).join(", ")}; usage `,
          Object.entries(ps.usage).map(([r, q]) => `${r}=${q}`).join(", ")),
        h("div", {}, "topology assignment: ", domainsBox(ps.topologyAssignment))))));
  }
  if (w.explanation) nodes.push(explanationSection(w.explanation));
  if (w.explanationError) nodes.push(h("p", { class: "error" }, `No explanation: ${w.explanationError}`));
  nodes.push(h("section", { id: "conditions" }, h("h2", {}, "Conditions"),
    w.conditions.length ? h("table", {}, h("thead", {}, h("tr", {}, ["type", "status", "reason", "message", "since"]
      .map((t) => h("th", {}, t)))), h("tbody", {}, w.conditions.map((c) => h("tr", {},
      h("td", {}, c.type), h("td", {}, c.status), h("td", {}, c.reason || ""), h("td", {}, c.message || ""),
      h("td", {}, c.lastTransitionTime || ""))))) : h("p", { class: "muted" }, "none written yet")));
  return { revision: w.revision, nodes };
}

function domainBox(d) {
  const used = Object.entries(d.used).map(([r, q]) => `${r} ${q}`).join(", ") || "idle";
  const alloc = Object.entries(d.allocatable).map(([r, q]) => `${r} ${q}`).join(", ");
  return h("div", { class: d.workloads.length ? "domain placed" : "domain", "data-domain": d.id },
    h("h4", {}, `${d.level.split("/").pop()} ${d.value}`),
    h("div", {}, usageBar({ usedPercent: d.usedPercent }), `${d.usedPercent}%`),
    h("div", { class: "muted", title: `allocatable ${alloc}` }, `used ${used}`),
    d.children.length ? "" : d.workloads.map((w) => h("div", { class: "wl", "data-workload": w.workload, "data-pods": w.pods },
      workloadLink(w.workload), ` ×${w.pods}`)),
    d.children.length ? h("div", { class: "domains" }, d.children.map(domainBox)) : "");
}

async function topologyView() {
  const t = await api("/api/topology");
  const nodes = t.flavors.length ? t.flavors.map((f) => h("section", { "data-flavor": f.flavor },
    h("h2", {}, `Flavor ${f.flavor} (topology ${f.topology}: ${f.levels.join(" / ")}, ${f.nodes ?? 0} nodes)`),
    f.error ? h("p", { class: "error" }, f.error) : h("div", { class: "domains" }, f.domains.map(domainBox))))
    : [h("p", { class: "muted" }, "No topology-aware flavors.")];
  return { revision: t.revision, nodes };
}

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (parts[0] === "workload" && parts.length >= 3) return () => workloadView(parts[1], parts[2]);
  if (parts[0] === "topology") return topologyView;
  if (parts[0] === "namespace" && parts[1]) return () => queuesView(parts[1]);
  return () => queuesView(null);
}

function showTotals(t) {
  const el = document.getElementById("totals");
  el.replaceChildren(h("b", {}, t.clusterQueues), " ClusterQueues · ", h("b", {}, t.pending), " pending · ",
    h("b", {}, t.admitted), " admitted · ", h("b", {}, t.localQueues), " LocalQueues");
}

async function refresh() {
  if (loading) { reloadAgain = true; return loading; }
  loading = (async () => {
    do {
      reloadAgain = false;
      try {
        const { revision, nodes } = await route()();
        document.getElementById("view").replaceChildren(...nodes);
        shownRevision = revision;
        document.getElementById("revision").textContent = revision;
        document.body.dataset.revision = String(revision);
      } catch (e) {
        if (e.status === 401) { location.assign("/login"); return; }
        const msg = e.status === 403 ? `Not allowed: ${e.message}` : `Could not load: ${e.message}`;
        document.getElementById("view").replaceChildren(h("p", { class: "error", id: "error" }, msg));
      }
    } while (reloadAgain || latestRevision > shownRevision);
  })();
  try { await loading; } finally { loading = null; }
}

function currentNamespace() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (parts[0] === "namespace" && parts[1]) return parts[1];
  // A workload's page keeps the stream the page came with (a namespace viewer's stays theirs).
  if (parts[0] === "workload" && parts[1]) return events ? streamNamespace : parts[1];
  return null;
}

let events = null;
let streamNamespace;

// Cluster-wide viewers get one stream with the totals; a namespace viewer that namespace's.
function listen() {
  const namespace = currentNamespace();
  if (events && streamNamespace === namespace) return;
  if (events) events.close();
  streamNamespace = namespace;
  const live = document.getElementById("live");
  events = new EventSource(namespace ? `/api/events?namespace=${encodeURIComponent(namespace)}` : "/api/events");
  events.addEventListener("open", () => { live.className = "live on"; live.textContent = "live"; });
  events.addEventListener("error", () => { live.className = "live off"; live.textContent = "reconnecting"; });
  events.addEventListener("denied", () => { events.close(); live.className = "live off"; live.textContent = "stopped"; });
  events.addEventListener("change", (e) => {
    const summary = JSON.parse(e.data);
    latestRevision = summary.revision;
    if (summary.totals) showTotals(summary.totals);
    if (summary.revision !== shownRevision) refresh();
  });
}

window.addEventListener("hashchange", () => { window.scrollTo(0, 0); refresh(); listen(); });
document.getElementById("namespace-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const ns = document.getElementById("namespace").value.trim();
  location.hash = ns ? `#/namespace/${encodeURIComponent(ns)}` : "#/";
});
api("/api/whoami").then((w) => { document.getElementById("user").textContent = `signed in as ${w.user}`; }, () => {});
api("/api/overview").then(showTotals, () => {});
refresh();
listen();
