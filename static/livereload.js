/* Only under `evalsite serve`: reload the page when the site has been rebuilt. */
(function () {
  "use strict";
  var seen = null;
  function poll() {
    fetch("/.evalsite-epoch", { cache: "no-store" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (epoch) {
        if (epoch === null) { return; }
        if (seen !== null && epoch !== seen) { window.location.reload(); }
        seen = epoch;
      })
      .catch(function () { /* the server is restarting; try again */ })
      .then(function () { window.setTimeout(poll, 1000); });
  }
  poll();
}());
