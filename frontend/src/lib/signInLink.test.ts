// @vitest-environment jsdom
import { afterEach, describe, expect, it } from "vitest";
import { takeSignInToken, tokenFromHash, tokenFromInput } from "./signInLink";

const TOKEN = "Zq3-xY_9abcdefghijklmnopqrstuvwxyz0123456789";

afterEach(() => history.replaceState(null, "", "/"));

describe("tokenFromHash", () => {
  it("reads the token after #sign-in=", () => {
    expect(tokenFromHash(`#sign-in=${TOKEN}`)).toBe(TOKEN);
    expect(tokenFromHash(`#sign-in=${encodeURIComponent(TOKEN)}`)).toBe(TOKEN);
  });

  it("ignores other fragments and empty tokens", () => {
    expect(tokenFromHash("")).toBeNull();
    expect(tokenFromHash("#q3-t1")).toBeNull();
    expect(tokenFromHash("#sign-in=")).toBeNull();
    expect(tokenFromHash("#sign-in=%E0%A4%A")).toBe("%E0%A4%A"); // malformed escapes: taken as is
  });
});

describe("tokenFromInput", () => {
  it("accepts the whole link, its fragment or the bare token, with surrounding spaces", () => {
    expect(tokenFromInput(`http://127.0.0.1:8000/#sign-in=${TOKEN}`)).toBe(TOKEN);
    expect(tokenFromInput(`  #sign-in=${TOKEN}\n`)).toBe(TOKEN);
    expect(tokenFromInput(TOKEN)).toBe(TOKEN);
  });

  it("refuses what cannot be a token", () => {
    expect(tokenFromInput("")).toBeNull();
    expect(tokenFromInput("   ")).toBeNull();
    expect(tokenFromInput("http://127.0.0.1:8000/")).toBeNull();
    expect(tokenFromInput("short")).toBeNull();
    expect(tokenFromInput(`${TOKEN} and more`)).toBeNull();
    expect(tokenFromInput("alm_this-is-an-api-key-not<a>token")).toBeNull();
  });
});

describe("takeSignInToken", () => {
  it("removes the link from the address bar (keeping path and query) and returns the token", () => {
    history.replaceState({ kept: 1 }, "", `/c/abc?x=1#sign-in=${TOKEN}`);
    const before = history.length;
    expect(takeSignInToken()).toBe(TOKEN);
    expect(location.hash).toBe("");
    expect(location.pathname + location.search).toBe("/c/abc?x=1");
    expect(history.length).toBe(before); // replaced, not pushed: Back does not bring it back
    expect(history.state).toEqual({ kept: 1 });
  });

  it("leaves other URLs alone", () => {
    history.replaceState(null, "", "/c/abc#q1-r");
    expect(takeSignInToken()).toBeNull();
    expect(location.hash).toBe("#q1-r");
  });
});
