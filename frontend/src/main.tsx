import { render } from "preact";
import { App } from "./app";
import { takeSignInToken } from "./lib/signInLink";
import "./styles.css";

// Before anything else: a one-time sign-in link's token leaves the address bar at once.
const signInToken = takeSignInToken();
render(<App signInToken={signInToken} />, document.getElementById("app")!);
