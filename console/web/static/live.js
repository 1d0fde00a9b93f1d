// batty console: live updates over server-sent events. The pages work
// without it; it only keeps them current. Text from agents arrives as
// text (line events, set with textContent) or inside HTML the server
// rendered and escaped (status events).
"use strict";
(function () {
  var body = document.body;
  var live = body.getAttribute("data-live");
  if (live && window.EventSource) {
    var target = document.getElementById("live");
    var es = new EventSource(live);
    // notify.js listens to the same stream.
    window.battyLive = es;
    es.onopen = function () { body.classList.add("is-live"); };
    es.onerror = function () { body.classList.remove("is-live"); };
    es.addEventListener("status", function (e) {
      // Keep a form being typed into as it is, and one holding an
      // unsent text.
      if (target.contains(document.activeElement) && /^(TEXTAREA|INPUT)$/.test(document.activeElement.tagName)) { return; }
      var fields = target.querySelectorAll("textarea, input[type=text]");
      for (var i = 0; i < fields.length; i++) { if (fields[i].value !== "") { return; } }
      // The same as shown (the first event repeats what the page was
      // rendered with): left alone, so a button about to be clicked stays.
      var next = document.createElement("template");
      next.innerHTML = e.data;
      if (next.innerHTML === target.innerHTML) { return; }
      target.innerHTML = e.data;
    });
  }
  var tr = body.getAttribute("data-transcript");
  if (tr && window.EventSource) {
    var pre = document.getElementById("transcript");
    var ts = new EventSource(tr);
    var max = 2000;
    ts.addEventListener("reset", function () { pre.textContent = ""; });
    ts.addEventListener("line", function (e) {
      var stick = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 40;
      pre.appendChild(document.createTextNode(e.data + "\n"));
      while (pre.childNodes.length > max) { pre.removeChild(pre.firstChild); }
      if (stick) { pre.scrollTop = pre.scrollHeight; }
    });
  }
})();
