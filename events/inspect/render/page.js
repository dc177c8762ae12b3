(function () {
  var q = document.getElementById('filter');
  if (q) {
    q.addEventListener('input', function () {
      var v = q.value.toLowerCase();
      document.querySelectorAll('[data-search]').forEach(function (el) {
        el.style.display = el.getAttribute('data-search').indexOf(v) === -1 ? 'none' : '';
      });
    });
  }
  function all(open) {
    document.querySelectorAll('details').forEach(function (d) { d.open = open; });
  }
  var ex = document.getElementById('expand');
  if (ex) { ex.addEventListener('click', function () { all(true); }); }
  var co = document.getElementById('collapse');
  if (co) { co.addEventListener('click', function () { all(false); }); }
  document.querySelectorAll('[data-target]').forEach(function (m) {
    m.addEventListener('click', function () {
      var d = document.getElementById(m.getAttribute('data-target'));
      if (!d) { return; }
      for (var p = d; p; p = p.parentElement) {
        if (p.tagName === 'DETAILS') { p.open = true; }
      }
      d.scrollIntoView({behavior: 'smooth', block: 'center'});
    });
  });
})();
