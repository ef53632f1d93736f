(function () {
  var data = JSON.parse(document.getElementById("pb-data").textContent);
  var columns = data.columns, kinds = Object.create(null), boards = Object.create(null);
  columns.forEach(function (c) { kinds[c[0]] = c[2]; });
  data.boards.forEach(function (b) { boards[b.id] = b; });
  var DEFAULT = {key: "rank", dir: "asc"};
  function parseHash() {  // {family, sorts: table id -> {key, dir}}; unknown or malformed parts are ignored
    var s = {family: "", sorts: Object.create(null)};
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i < 0) return;
      var k = kv.slice(0, i), v;
      try { v = decodeURIComponent(kv.slice(i + 1)); } catch (e) { return; }
      if (k === "family") { s.family = v; return; }
      var m = /^(\w+)\.(asc|desc)$/.exec(v);
      if (k in boards && m && m[1] in kinds) s.sorts[k] = {key: m[1], dir: m[2]};
    });
    return s;
  }
  function setHash(s) {
    var parts = ["family=" + encodeURIComponent(s.family)];
    data.boards.forEach(function (b) {
      var o = s.sorts[b.id];
      if (o) parts.push(b.id + "=" + o.key + "." + o.dir);
    });
    location.hash = parts.join("&");
  }
  function cmp(kind, dir) {
    return function (a, b) {
      var x = a.sort, y = b.sort, ma = x === null, mb = y === null;
      if (ma || mb) return ma === mb ? 0 : (ma ? 1 : -1);  // missing values last, either direction
      var r = kind === "num" ? x - y : String(x).localeCompare(String(y));
      return dir === "asc" ? r : -r;
    };
  }
  function matches(families, fam) { return !fam || families.indexOf(fam) >= 0; }
  function render() {
    var s = parseHash();
    document.getElementById("family").value = s.family;
    data.boards.forEach(function (board) {
      var o = s.sorts[board.id] || DEFAULT;
      var table = document.getElementById(board.id);
      var shown = columns.filter(function (c) { return (board.hide || []).indexOf(c[0]) < 0; });
      var thead = "<tr>" + shown.map(function (c) {
        var sort = c[0] === o.key ? (o.dir === "asc" ? "ascending" : "descending") : "none";
        return '<th data-key="' + c[0] + '" aria-sort="' + sort + '" class="' + (c[2] === "text" ? "t" : "") + '">' + ((board.headers && board.headers[c[0]]) || c[1]) + "</th>";
      }).join("") + "</tr>";
      var rows = board.rows.filter(function (r) { return matches(r.families, s.family); }).map(function (r) {
        return {sort: r.sort[o.key], row: r};
      });
      rows.sort(cmp(kinds[o.key], o.dir));
      var body = rows.map(function (x) {
        var r = x.row;
        return '<tr class="pb-row' + (r.baseline ? " baseline" : "") + '" data-x="' + r.x +
          '" data-y="' + r.y + '">' +
          shown.map(function (c) {
            var v = r.cells[c[0]];
            var cls = (c[2] === "text" ? "t" : "") + (v === "missing" ? " missing" : "");
            return '<td class="' + cls + '">' + v + "</td>";
          }).join("") + "</tr>";
      }).join("");
      table.innerHTML = "<thead>" + thead + "</thead><tbody>" + body + "</tbody>";
      document.getElementById(board.id + "-count").textContent =
        rows.length + " of " + board.rows.length + " rows shown";
    });
    Array.prototype.forEach.call(document.querySelectorAll("tr[data-families]"), function (tr) {
      tr.hidden = !matches(tr.getAttribute("data-families").split(" "), s.family);
    });
  }
  document.addEventListener("click", function (ev) {
    var th = ev.target.closest("th[data-key]"), table = th && th.closest("table");
    if (!table || !(table.id in boards)) return;
    var s = parseHash(), key = th.getAttribute("data-key"), o = s.sorts[table.id] || DEFAULT;
    var dir = o.key === key ? (o.dir === "asc" ? "desc" : "asc") : boards[table.id].first[key];
    s.sorts[table.id] = {key: key, dir: dir};
    setHash(s);
  });
  document.getElementById("family").addEventListener("change", function (ev) {
    var s = parseHash();
    s.family = ev.target.value;
    setHash(s);
  });
  // contents links scroll to their section and leave the fragment (the view's state) as it is
  document.querySelectorAll("#contents a").forEach(function (a) {
    a.addEventListener("click", function (ev) {
      var target = document.getElementById(a.getAttribute("href").slice(1));
      if (!target) return;
      ev.preventDefault();
      target.scrollIntoView();
    });
  });
  window.addEventListener("hashchange", render);
  render();
})();
