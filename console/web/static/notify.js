// batty console: what waits for the human, live — the tab's title counts
// the unread messages and unseen alerts, the header each page's count —
// and, once the human asks for them (a button; the browser asks them too),
// a notification for each new message to the human and each new alert.
// Texts arrive as JSON strings and are set as text, never as markup.
"use strict";
(function () {
  var body = document.body;
  var live = body.getAttribute("data-live");
  var button = document.getElementById("notify");
  var canNotify = "Notification" in window;
  var store = window.localStorage;
  var seenKey = "batty-seen:" + location.host;
  var optKey = "batty-notify:" + location.host;

  function optedIn() { return canNotify && Notification.permission === "granted" && store && store.getItem(optKey) === "on"; }
  function showButton() {
    if (!button || !canNotify || !store) { return; }
    button.hidden = false;
    button.textContent = optedIn() ? "Notifying" : "Notify me";
    button.setAttribute("aria-pressed", optedIn() ? "true" : "false");
  }
  if (button && canNotify && store) {
    button.addEventListener("click", function () {
      if (optedIn()) { store.setItem(optKey, "off"); showButton(); return; }
      Notification.requestPermission().then(function (p) {
        if (p === "granted") { store.setItem(optKey, "on"); }
        showButton();
      });
    });
  }
  showButton();

  function setCount(id, n) {
    var el = document.getElementById(id);
    if (el) { el.textContent = n > 0 ? String(n) : ""; }
  }
  function seen() {
    try { return JSON.parse(store.getItem(seenKey) || "null"); } catch (e) { return null; }
  }
  function onBadge(e) {
    var b;
    try { b = JSON.parse(e.data); } catch (err) { return; }
    var title = document.title.replace(/^\(\d+\) /, "");
    document.title = (b.unread > 0 ? "(" + b.unread + ") " : "") + title;
    setCount("n-inbox", b.inbox);
    setCount("n-alerts", b.alerts);
    setCount("n-review", b.review);
    if (!store) { return; }
    var keys = (b.notes || []).map(function (n) { return n.key; });
    var known = seen();
    if (known !== null && optedIn()) {
      (b.notes || []).forEach(function (n) {
        if (known.indexOf(n.key) >= 0) { return; }
        var note = new Notification(n.title, { body: n.body, tag: n.key });
        note.onclick = function () { window.focus(); location.href = n.url; };
      });
    }
    // Remember what was there: the first look notifies of nothing old.
    store.setItem(seenKey, JSON.stringify(keys.concat(known || []).slice(0, 200)));
  }
  if (live && window.EventSource) {
    // live.js has the page's stream; this one listens to the same events.
    var es = window.battyLive || new EventSource(live);
    es.addEventListener("badge", onBadge);
  }
})();
