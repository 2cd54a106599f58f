// The sign-in page: a link of `pykueue dev up` carries the token in the address's fragment
// (#token=...), which never reaches the server. Put it into the form and out of the address
// bar; signing in stays a click on the form, which the server checks came from this page.
"use strict";

const fragment = new URLSearchParams(location.hash.replace(/^#/, ""));
const offered = fragment.get("token");
if (offered) {
  document.getElementById("token").value = offered;
  history.replaceState(null, "", location.pathname);
  document.querySelector("form button").focus();
}
