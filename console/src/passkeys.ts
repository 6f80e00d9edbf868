// Passkeys: the browser's WebAuthn, with the server's options as JSON both ways (the browser's
// own parse…FromJSON and toJSON: no base64 by hand). The server keeps each ceremony's state in
// a short-lived cookie; the page holds nothing.

import { call, type Me } from "./api";

/** Whether this browser can make and use passkeys at all. */
export function passkeysSupported(): boolean {
  return typeof window.PublicKeyCredential === "function" && typeof PublicKeyCredential.parseCreationOptionsFromJSON === "function";
}

/** Enrolls a passkey on this device for the signed-in person, under `name`. */
export async function enrollPasskey(name: string): Promise<void> {
  const options = await call<{ publicKey: PublicKeyCredentialCreationOptionsJSON }>("POST", "/api/v1/console/me/passkeys/registration");
  const publicKey = PublicKeyCredential.parseCreationOptionsFromJSON(options.publicKey);
  const credential = (await navigator.credentials.create({ publicKey })) as PublicKeyCredential | null;
  if (!credential) throw new Error("No passkey was made.");
  await call("POST", "/api/v1/console/me/passkeys", { name, credential: credential.toJSON() });
}

/** Signs in with one of this site's passkeys, as the browser lets the person choose. */
export async function signInWithPasskey(): Promise<Me> {
  const options = await call<{ publicKey: PublicKeyCredentialRequestOptionsJSON }>("POST", "/api/v1/console/sign-in/passkey/options");
  const publicKey = PublicKeyCredential.parseRequestOptionsFromJSON(options.publicKey);
  const credential = (await navigator.credentials.get({ publicKey })) as PublicKeyCredential | null;
  if (!credential) throw new Error("No passkey was chosen.");
  return call<Me>("POST", "/api/v1/console/sign-in/passkey", { credential: credential.toJSON() });
}

/** The name a new passkey gets unless the person types one: what this device is. */
export function deviceName(): string {
  const platform = (navigator as Navigator & { userAgentData?: { platform?: string } }).userAgentData?.platform || navigator.platform || "";
  return platform ? `Passkey on ${platform}` : "My passkey";
}

/** A person's message for what a WebAuthn call threw. */
export function passkeyProblem(error: unknown): string {
  if (error instanceof DOMException && error.name === "NotAllowedError") return "The passkey request was cancelled or timed out. Try again.";
  if (error instanceof DOMException && error.name === "InvalidStateError") return "This device already holds a passkey for you here.";
  return error instanceof Error ? error.message : String(error);
}
