//! This browser's signing key. Where the browser supports Ed25519 in WebCrypto, the key
//! is generated **non-extractable** and kept in IndexedDB: the page can ask it to sign,
//! but no script (nor the user) can read its secret. Where it does not, the key is a
//! software key whose secret sits in this origin's `localStorage` (the page says so). A
//! key the user imports is always a software key, and is never trusted by itself.

use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::core::lifecycle;
use crate::core::sign::{self, KeyPair};
use crate::web::store;

#[wasm_bindgen(inline_js = r##"
const DB = "pinbench", STORE = "keys", ID = "signing", REPORTS = "reports", CHECKPOINTS = "checkpoints";
function open() {
  return new Promise((resolve, reject) => {
    const r = indexedDB.open(DB, 3);
    r.onupgradeneeded = () => {
      for (const name of [STORE, REPORTS, CHECKPOINTS]) if (!r.result.objectStoreNames.contains(name)) r.result.createObjectStore(name);
    };
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}
function tx(db, mode, f, store = STORE) {
  return new Promise((resolve, reject) => {
    const t = db.transaction(store, mode);
    const req = f(t.objectStore(store));
    t.oncomplete = () => resolve(req.result);
    t.onerror = () => reject(t.error);
    t.onabort = () => reject(t.error);
  });
}
async function withDb(f) {
  const db = await open();
  try { return await f(db); } finally { db.close(); }
}
// Finished reports not yet downloaded, by run id (kept until downloaded or discarded).
export function pb_report_put(id, text) { return withDb((db) => tx(db, "readwrite", (s) => s.put(text, id), REPORTS)); }
export function pb_report_delete(id) { return withDb((db) => tx(db, "readwrite", (s) => s.delete(id), REPORTS)); }
export function pb_reports() {
  return withDb(async (db) => {
    const keys = await tx(db, "readonly", (s) => s.getAllKeys(), REPORTS);
    const values = await tx(db, "readonly", (s) => s.getAll(), REPORTS);
    return keys.map((k, i) => [String(k), values[i]]);
  });
}
// Checkpoints of runs in progress: a head (key = run key) and parts of records (key#n),
// written in the order they are asked for (one queue), so a removal never overtakes a write.
// A part of records is stored gzip-compressed (bytes) where the browser can: a long run's
// checkpoint takes a fraction of the space; a head, or a part where it cannot, as text.
let queue = Promise.resolve();
function queued(f) { const p = queue.then(f, f); queue = p.catch(() => {}); return p; }
const gz = typeof CompressionStream === "function" && typeof DecompressionStream === "function";
async function pipe(data, stream) { return new Response(new Blob([data]).stream().pipeThrough(stream)); }
async function packed(key, text) { return gz && key.includes("#") ? new Uint8Array(await (await pipe(text, new CompressionStream("gzip"))).arrayBuffer()) : text; }
async function unpacked(v) { return typeof v === "string" ? v : await (await pipe(v, new DecompressionStream("gzip"))).text(); }
export function pb_ckpt_put(key, text) {
  const value = packed(key, text);
  return queued(async () => { const v = await value; return withDb((db) => tx(db, "readwrite", (s) => s.put(v, key), CHECKPOINTS)); });
}
// Settles when every checkpoint write this scope has asked for so far has settled.
export function pb_ckpt_settled() { return queue; }
export function pb_ckpt_remove(key) {
  return queued(() => withDb((db) => tx(db, "readwrite", (s) => {
    s.delete(IDBKeyRange.bound(key + "#", key + "#\uffff"));
    return s.delete(key);
  }, CHECKPOINTS)));
}
export function pb_ckpt_all() {
  return queued(() => withDb(async (db) => {
    const keys = await tx(db, "readonly", (s) => s.getAllKeys(), CHECKPOINTS);
    const values = await tx(db, "readonly", (s) => s.getAll(), CHECKPOINTS);
    return Promise.all(keys.map(async (k, i) => [String(k), await unpacked(values[i])]));
  }));
}
// The parts of one checkpoint, in order, as text.
export function pb_ckpt_parts(key) {
  return queued(() => withDb(async (db) => {
    const values = await tx(db, "readonly", (s) => s.getAll(IDBKeyRange.bound(key + "#", key + "#\uffff")), CHECKPOINTS);
    return Promise.all(values.map(unpacked));
  }));
}
// A run holds a Web Lock named after it while it goes: other tabs see it live.
export function pb_lock_hold(name) {
  if (!globalThis.navigator?.locks) return null;
  let release;
  const held = new Promise((r) => { release = r; });
  navigator.locks.request(name, () => held).catch(() => {});
  return release;
}
export async function pb_locks_held() {
  if (!globalThis.navigator?.locks) return [];
  const q = await navigator.locks.query();
  return (q.held ?? []).map((l) => l.name);
}
export async function pb_storage_estimate() {
  try { const e = await navigator.storage?.estimate?.(); return e ? [e.usage ?? 0, e.quota ?? 0] : null; } catch { return null; }
}
export async function pb_persist() {
  try { return (await navigator.storage?.persist?.()) === true; } catch { return false; }
}
let unloadGuard = null;
export function pb_guard_unload(on) {
  if (on && !unloadGuard) {
    unloadGuard = (e) => { e.preventDefault(); e.returnValue = ""; };
    addEventListener("beforeunload", unloadGuard);
  } else if (!on && unloadGuard) {
    removeEventListener("beforeunload", unloadGuard);
    unloadGuard = null;
  }
}
async function load() {
  const db = await open();
  try { return (await tx(db, "readonly", (s) => s.get(ID))) ?? null; } finally { db.close(); }
}
async function generate() {
  let pair;
  try { pair = await crypto.subtle.generateKey({ name: "Ed25519" }, false, ["sign", "verify"]); }
  catch { return null; }
  const publicRaw = new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey));
  const entry = { privateKey: pair.privateKey, publicRaw };
  const db = await open();
  try { await tx(db, "readwrite", (s) => s.put(entry, ID)); } finally { db.close(); }
  return entry;
}
// One key per browser even when several callers ask at once on a first visit.
let pending = null;
export function pb_key_get_or_create() {
  if (!globalThis.crypto?.subtle || typeof indexedDB === "undefined") return Promise.resolve(null);
  pending ??= (async () => (await load()) ?? (await generate()))().catch((e) => { pending = null; throw e; });
  return pending;
}
export async function pb_key_sign(privateKey, bytes) {
  return new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, privateKey, bytes));
}
"##)]
extern "C" {
    #[wasm_bindgen(catch)]
    fn pb_key_get_or_create() -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch)]
    fn pb_key_sign(private_key: &JsValue, bytes: &[u8]) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch)]
    fn pb_report_put(id: &str, text: &str) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch)]
    fn pb_report_delete(id: &str) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch)]
    fn pb_reports() -> Result<js_sys::Promise, JsValue>;
    fn pb_lock_hold(name: &str) -> JsValue;
    #[wasm_bindgen(catch)]
    fn pb_ckpt_put(key: &str, text: &str) -> Result<js_sys::Promise, JsValue>;
    fn pb_ckpt_settled() -> js_sys::Promise;
    #[wasm_bindgen(catch)]
    fn pb_ckpt_remove(key: &str) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch)]
    fn pb_ckpt_all() -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch)]
    fn pb_ckpt_parts(key: &str) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch)]
    fn pb_locks_held() -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch)]
    fn pb_persist() -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch)]
    fn pb_storage_estimate() -> Result<js_sys::Promise, JsValue>;
    fn pb_guard_unload(on: bool);
}

/// Waits for a JS promise whose value does not matter.
async fn settled(p: Result<js_sys::Promise, JsValue>) -> Result<(), String> {
    JsFuture::from(p.map_err(js)?).await.map(|_| ()).map_err(js)
}

/// Waits for a JS promise of `[[string, string], …]`.
async fn string_pairs(
    p: Result<js_sys::Promise, JsValue>,
) -> Result<Vec<(String, String)>, String> {
    let v = JsFuture::from(p.map_err(js)?).await.map_err(js)?;
    Ok(js_sys::Array::from(&v)
        .iter()
        .filter_map(|pair| {
            let a = js_sys::Array::from(&pair);
            Some((a.get(0).as_string()?, a.get(1).as_string()?))
        })
        .collect())
}

/// Keeps a finished run's report in IndexedDB until it is downloaded or discarded.
pub async fn keep_report(id: &str, text: &str) -> Result<(), String> {
    settled(pb_report_put(id, text)).await
}

/// Forgets a kept report (downloaded, or discarded by the user).
pub async fn forget_report(id: &str) -> Result<(), String> {
    settled(pb_report_delete(id)).await
}

/// The reports kept and not yet downloaded: (run id, report text).
pub async fn kept_reports() -> Result<Vec<(String, String)>, String> {
    string_pairs(pb_reports()).await
}

/// Writes a checkpoint item (a run's head, or a part of its records) to IndexedDB.
pub async fn checkpoint_put(key: &str, text: &str) -> Result<(), String> {
    settled(pb_ckpt_put(key, text)).await
}

/// Waits until every checkpoint write this scope (page or worker) asked for so far has
/// settled: a run's host hands over its end only after its records are stored.
pub async fn checkpoint_writes_settled() {
    let _ = JsFuture::from(pb_ckpt_settled()).await;
}

/// Removes a run's checkpoint head and every part.
pub async fn checkpoint_remove(key: &str) -> Result<(), String> {
    settled(pb_ckpt_remove(key)).await
}

/// Every checkpoint item: (key, text).
pub async fn checkpoint_items() -> Result<Vec<(String, String)>, String> {
    string_pairs(pb_ckpt_all()).await
}

/// One checkpoint's parts (`key#n`), in order, as JS strings (each is read into the
/// wasm memory and parsed on its own: a long run's parts are never all copied at once).
pub async fn checkpoint_parts(key: &str) -> Result<js_sys::Array, String> {
    let v = JsFuture::from(pb_ckpt_parts(key).map_err(js)?)
        .await
        .map_err(js)?;
    Ok(js_sys::Array::from(&v))
}

/// Holds a Web Lock named `name` until the returned function is called (`None` where the
/// browser has no Web Locks).
pub fn hold_lock(name: &str) -> Option<js_sys::Function> {
    pb_lock_hold(name).dyn_into::<js_sys::Function>().ok()
}

/// The names of the Web Locks held now, by any tab of this origin.
pub async fn held_locks() -> Vec<String> {
    let Ok(p) = pb_locks_held() else {
        return Vec::new();
    };
    JsFuture::from(p)
        .await
        .map(|v| {
            js_sys::Array::from(&v)
                .iter()
                .filter_map(|x| x.as_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Asks the browser not to evict this origin's storage; whether it agreed.
pub async fn ask_persistent_storage() -> bool {
    match pb_persist() {
        Ok(p) => JsFuture::from(p)
            .await
            .ok()
            .and_then(|v| v.as_bool())
            .unwrap_or(false),
        Err(_) => false,
    }
}

/// This origin's storage: (bytes used, quota), when the browser tells.
pub async fn storage_estimate() -> Option<(f64, f64)> {
    let v = JsFuture::from(pb_storage_estimate().ok()?).await.ok()?;
    let a = js_sys::Array::from(&v);
    Some((a.get(0).as_f64()?, a.get(1).as_f64()?))
}

/// Asks before the page is left (`on`), or stops asking.
pub fn guard_unload(on: bool) {
    pb_guard_unload(on);
}

/// A key that can sign reports.
#[derive(Clone, Debug)]
pub enum Signer {
    /// A non-extractable WebCrypto Ed25519 key kept in IndexedDB.
    WebCrypto {
        /// The `CryptoKey` handle (its secret never reaches the page).
        private_key: JsValue,
        /// Its public key.
        public_key: [u8; 32],
    },
    /// A software key whose secret is in `localStorage` (imported, or a browser without
    /// WebCrypto Ed25519).
    Software(KeyPair),
}

impl Signer {
    /// The public key.
    pub fn public_key(&self) -> [u8; 32] {
        match self {
            Signer::WebCrypto { public_key, .. } => *public_key,
            Signer::Software(k) => k.public_key(),
        }
    }

    /// The key's fingerprint.
    pub fn key_id(&self) -> String {
        sign::key_id(&self.public_key())
    }

    /// Where the secret lives, in words for the page.
    pub fn where_kept(&self) -> &'static str {
        match self {
            Signer::WebCrypto { .. } => {
                "non-extractable WebCrypto key in this browser's IndexedDB (its secret cannot be read or exported)"
            }
            Signer::Software(_) => {
                "software key: its secret is in this site's localStorage (this browser has no WebCrypto Ed25519, or the key was imported)"
            }
        }
    }

    /// Signs `message`.
    pub async fn sign(&self, message: &[u8]) -> Result<[u8; 64], String> {
        match self {
            Signer::Software(k) => Ok(k.sign(message)),
            Signer::WebCrypto { private_key, .. } => {
                let p = pb_key_sign(private_key, message).map_err(js)?;
                let v = JsFuture::from(p).await.map_err(js)?;
                let bytes = js_sys::Uint8Array::new(&v).to_vec();
                bytes
                    .try_into()
                    .map_err(|_| "WebCrypto returned a signature that is not 64 bytes".into())
            }
        }
    }
}

/// The lifecycle signs reports with this browser's key (`lifecycle::finish`).
impl lifecycle::Signer for Signer {
    fn public_key(&self) -> [u8; 32] {
        Signer::public_key(self)
    }

    fn sign(&self, bytes: &[u8]) -> impl std::future::Future<Output = Result<[u8; 64], String>> {
        Signer::sign(self, bytes)
    }
}

fn js(e: JsValue) -> String {
    crate::web::fetch::js_err(e)
}

fn entry_signer(v: &JsValue) -> Option<Signer> {
    if v.is_null() || v.is_undefined() {
        return None;
    }
    let private_key = js_sys::Reflect::get(v, &"privateKey".into()).ok()?;
    let raw = js_sys::Reflect::get(v, &"publicRaw".into()).ok()?;
    let public_key: [u8; 32] = js_sys::Uint8Array::new(&raw).to_vec().try_into().ok()?;
    Some(Signer::WebCrypto {
        private_key,
        public_key,
    })
}

/// This browser's signer: a software key already in `localStorage` (imported by the
/// user, or made by an earlier version); else the WebCrypto key in IndexedDB, generated
/// non-extractable on first use; else (no WebCrypto Ed25519) a new software key.
pub async fn signer() -> Result<Signer, String> {
    // A key the user imported, or a software key made by an earlier version: kept.
    if let Some(k) = store::existing_signing_key() {
        return Ok(Signer::Software(k));
    }
    if let Ok(p) = pb_key_get_or_create() {
        if let Ok(v) = JsFuture::from(p).await {
            if let Some(s) = entry_signer(&v) {
                store::set_own_public_key(&s.public_key());
                return Ok(s);
            }
        }
    }
    // No WebCrypto Ed25519 here: a software key in localStorage.
    store::signing_key().map(Signer::Software)
}
