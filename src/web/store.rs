//! What the browser keeps: in `localStorage` the signing key, an API key only when the
//! user ticks "remember" and the trust list; in IndexedDB the checkpoints of runs in
//! progress (one per run id, their records in bounded parts, gzip-compressed where the
//! browser has `CompressionStream`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::core::record::RequestRecord;
use crate::core::report::Checkpoint;
use crate::core::sign::KeyPair;
use crate::core::viewer::TrustedKeys;
use crate::web;

const KEY_STORAGE: &str = "pinbench.signing-key";
/// Where the API key is kept, only when the user ticks "remember".
const API_KEY_STORAGE: &str = "pinbench.api-key";
/// Where a run in progress keeps its completed requests (one key per run id), so that a
/// closed or crashed tab loses none of them.
pub const CHECKPOINT_PREFIX: &str = "pinbench.checkpoint.";
/// The single checkpoint key of earlier versions (still offered when found).
const LEGACY_CHECKPOINT: &str = "pinbench.interrupted-run";

/// The signing key in browser storage, if one was created (never creates one).
pub fn existing_signing_key() -> Option<KeyPair> {
    web::storage()
        .and_then(|s| s.get_item(KEY_STORAGE).ok().flatten())
        .and_then(|t| KeyPair::from_secret_base64(&t).ok())
}

/// The signing key from browser storage, created on first use (`Err` when the browser
/// cannot make a random secret: no key is ever made from anything else).
pub fn signing_key() -> Result<KeyPair, String> {
    let stored = web::storage().and_then(|s| s.get_item(KEY_STORAGE).ok().flatten());
    if let Some(k) = stored.and_then(|t| KeyPair::from_secret_base64(&t).ok()) {
        return Ok(k);
    }
    let k = KeyPair::from_secret(web::random_seed()?);
    if let Some(s) = web::storage() {
        let _ = s.set_item(KEY_STORAGE, &k.secret_base64());
        let _ = s.set_item(KEY_ORIGIN_STORAGE, "generated");
    }
    Ok(k)
}

/// The public key of this browser's WebCrypto signing key (public; kept so the trust
/// list can name it without waiting on IndexedDB).
const OWN_PUBLIC_KEY_STORAGE: &str = "pinbench.own_public_key";

/// Records this browser's WebCrypto public key.
pub fn set_own_public_key(pk: &[u8; 32]) {
    if let Some(s) = web::storage() {
        let _ = s.set_item(OWN_PUBLIC_KEY_STORAGE, &crate::core::base64::encode(pk));
    }
}

/// This browser's own public key (base64): its WebCrypto key's, else its generated
/// software key's; `None` for an imported key.
pub fn own_public_key() -> Option<String> {
    if !signing_key_generated_here() {
        return None;
    }
    existing_signing_key()
        .map(|k| k.public_key_base64())
        .or_else(|| {
            web::storage()?
                .get_item(OWN_PUBLIC_KEY_STORAGE)
                .ok()
                .flatten()
        })
}

/// Where this browser's signing key came from: generated here (trusted as this
/// browser's key) or imported (trusted only when the user adds it to the trust list).
const KEY_ORIGIN_STORAGE: &str = "pinbench.signing_key_origin";

/// Whether this browser's signing key was generated here (keys kept before the origin
/// was recorded count as generated).
pub fn signing_key_generated_here() -> bool {
    web::storage()
        .and_then(|s| s.get_item(KEY_ORIGIN_STORAGE).ok().flatten())
        .is_none_or(|o| o == "generated")
}

/// Keeps `k` as this browser's signing key; `Err` when storage is unavailable.
pub fn keep_signing_key(k: &KeyPair) -> Result<(), String> {
    // An imported key is never trusted by itself.
    match web::storage().map(|s| {
        s.set_item(KEY_ORIGIN_STORAGE, "imported")?;
        s.set_item(KEY_STORAGE, &k.secret_base64())
    }) {
        Some(Ok(())) => Ok(()),
        _ => Err("This browser's storage is not available: the key was not kept.".into()),
    }
}

/// The API key remembered in this browser, if the user asked for that.
pub fn remembered_api_key() -> Option<(String, String)> {
    // Stored with the endpoint origin it was entered for; a key stored without one (an
    // older version) is not used.
    let text = web::storage().and_then(|s| s.get_item(API_KEY_STORAGE).ok().flatten())?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    Some((
        v["origin"].as_str()?.to_owned(),
        v["key"].as_str()?.to_owned(),
    ))
}

/// Remembers `key` for the endpoint `origin` (`Some`) or forgets any remembered key
/// (`None`).
pub fn remember_api_key(entry: Option<(&str, &str)>) {
    if let Some(s) = web::storage() {
        let _ = match entry {
            Some((origin, key)) => s.set_item(
                API_KEY_STORAGE,
                &serde_json::json!({"origin": origin, "key": key}).to_string(),
            ),
            None => s.remove_item(API_KEY_STORAGE),
        };
    }
}

/// Writes a checkpoint's description (everything but the records) under `key`, in
/// IndexedDB; its records are written in parts as they arrive
/// ([`append_checkpoint_records`]), so each write costs only the new records, never the
/// whole run again.
pub async fn save_checkpoint(key: &str, mut cp: Checkpoint) -> Result<(), String> {
    cp.records.clear();
    let text = serde_json::to_string(&cp).map_err(|e| e.to_string())?;
    crate::web::keystore::checkpoint_put(key, &text).await
}

/// Writes part `n` of a checkpoint's records (a JSON array, as the run's host sent it);
/// `Err` when the browser's storage refused it (that part is then not kept).
pub async fn append_checkpoint_records(
    key: &str,
    n: u32,
    records_json: &str,
) -> Result<(), String> {
    crate::web::keystore::checkpoint_put(&format!("{key}#{n:08}"), records_json).await
}

/// Writes a run's completed records as the parts of its checkpoint (`key#n`, in order)
/// from the scope that runs it: the run's worker writes them itself, so the records
/// never pass through the page's main thread while the run goes. A part the browser's
/// storage refuses is held in memory ([`Self::take_held`]): the run's report still has
/// every record. Clones write the same checkpoint.
#[derive(Clone)]
pub struct PartWriter {
    key: Rc<str>,
    next: Rc<Cell<u32>>,
    held: Rc<RefCell<Vec<String>>>,
}

impl PartWriter {
    /// A writer of the checkpoint under `key`, from its first part.
    pub fn new(key: String) -> Self {
        Self {
            key: key.into(),
            next: Rc::new(Cell::new(0)),
            held: Rc::default(),
        }
    }

    /// Writes the next part (`count` records as JSON text) in the background; `written`
    /// then learns the count and whether the browser's storage took it.
    pub fn write(
        &self,
        text: String,
        count: u32,
        written: impl FnOnce(u32, Result<(), String>) + 'static,
    ) {
        let n = self.next.get();
        self.next.set(n + 1);
        let (key, held) = (self.key.clone(), self.held.clone());
        wasm_bindgen_futures::spawn_local(async move {
            let stored = append_checkpoint_records(&key, n, &text).await;
            if stored.is_err() {
                held.borrow_mut().push(text);
            }
            written(count, stored);
        });
    }

    /// The parts storage refused so far (JSON arrays of records), taken.
    pub fn take_held(&self) -> Vec<String> {
        std::mem::take(&mut *self.held.borrow_mut())
    }
}

/// The records of a run's checkpoint `key` (its parts, in order), as the run's host
/// stored them: a finished run's report is built from them.
pub async fn checkpoint_records(key: &str) -> Result<Vec<RequestRecord>, String> {
    let parts = crate::web::keystore::checkpoint_parts(key).await?;
    let mut out = Vec::new();
    for (n, part) in parts.iter().enumerate() {
        let records = part
            .as_string()
            .and_then(|t| crate::core::json::from_str::<Vec<RequestRecord>>(&t).ok())
            .ok_or_else(|| format!("Part {n} of the run's checkpoint does not read."))?;
        out.extend(records);
    }
    Ok(out)
}

/// Removes a checkpoint and all its parts (in IndexedDB, and in `localStorage` where
/// earlier versions kept them).
pub fn remove_checkpoint(key: &str) {
    let k = key.to_owned();
    wasm_bindgen_futures::spawn_local(async move {
        let _ = crate::web::keystore::checkpoint_remove(&k).await;
    });
    let Some(s) = web::storage() else { return };
    let n = s.length().unwrap_or(0);
    let parts: Vec<String> = (0..n)
        .filter_map(|i| s.key(i).ok().flatten())
        .filter(|k| {
            k.strip_prefix(key)
                .is_some_and(|rest| rest.starts_with('#'))
        })
        .collect();
    for k in parts {
        let _ = s.remove_item(&k);
    }
    let _ = s.remove_item(key);
}

/// A checkpoint from its head's text and its parts' texts in order.
fn assemble(head: &str, parts: &[&str]) -> Option<Checkpoint> {
    let mut cp: Checkpoint = crate::core::json::from_str(head).ok()?;
    for p in parts {
        cp.records
            .extend(crate::core::json::from_str::<Vec<RequestRecord>>(p).unwrap_or_default());
    }
    Some(cp)
}

/// Checkpoints of runs that have not written their report (one per run id), oldest
/// first: IndexedDB's, and those earlier versions left in `localStorage`.
pub async fn stored_checkpoints() -> Vec<(String, Checkpoint)> {
    let mut out = Vec::new();
    // IndexedDB: heads and their `#nnnnnnnn` parts (sorted by key, so parts are in order).
    let mut items = crate::web::keystore::checkpoint_items()
        .await
        .unwrap_or_default();
    crate::core::sort::sort_by(&mut items, |a, b| a.0.cmp(&b.0));
    for (k, head) in items.iter().filter(|(k, _)| !k.contains('#')) {
        let parts: Vec<&str> = items
            .iter()
            .filter(|(p, _)| {
                p.strip_prefix(k.as_str())
                    .is_some_and(|r| r.starts_with('#'))
            })
            .map(|(_, t)| t.as_str())
            .collect();
        if let Some(cp) = assemble(head, &parts) {
            out.push((k.clone(), cp));
        }
    }
    // localStorage (earlier versions).
    if let Some(store) = web::storage() {
        let n = store.length().unwrap_or(0);
        let all: Vec<String> = (0..n).filter_map(|i| store.key(i).ok().flatten()).collect();
        for k in all.iter().filter(|k| {
            (k.starts_with(CHECKPOINT_PREFIX) && !k.contains('#')) || *k == LEGACY_CHECKPOINT
        }) {
            let Some(head) = store.get_item(k).ok().flatten() else {
                continue;
            };
            let mut parts: Vec<(u32, String)> = all
                .iter()
                .filter_map(|p| {
                    let n = p
                        .strip_prefix(k.as_str())?
                        .strip_prefix('#')?
                        .parse()
                        .ok()?;
                    Some((n, store.get_item(p).ok().flatten()?))
                })
                .collect();
            crate::core::sort::sort_by(&mut parts, |a, b| a.0.cmp(&b.0));
            let texts: Vec<&str> = parts.iter().map(|(_, t)| t.as_str()).collect();
            if let Some(cp) = assemble(&head, &texts) {
                out.push((k.clone(), cp));
            }
        }
    }
    crate::core::sort::sort_by(&mut out, |a, b| {
        a.1.created.cmp(&b.1.created).then_with(|| a.0.cmp(&b.0))
    });
    out
}

/// Where the trusted keys are kept.
const TRUSTED_STORAGE: &str = "pinbench.trusted-keys";

/// The key id of this browser's own key after the user forgot it in the trust list.
pub const OWN_KEY_FORGOTTEN: &str = "pinbench.own_key_forgotten";

/// Trusted keys from storage, plus this browser's own signing key when it was generated
/// here (an imported key is trusted only when the user adds it). The app and the card
/// page (same origin) read the same list.
pub fn load_trusted() -> TrustedKeys {
    let mut t = web::storage()
        .and_then(|s| s.get_item(TRUSTED_STORAGE).ok().flatten())
        .map(|s| TrustedKeys::from_json(&s))
        .unwrap_or_default();
    let forgotten = web::storage().and_then(|s| s.get_item(OWN_KEY_FORGOTTEN).ok().flatten());
    if let Some(pk) = own_public_key() {
        let id = crate::core::sign::public_key_from_base64(&pk)
            .map(|k| crate::core::sign::key_id(&k))
            .ok();
        if id.is_some() && id != forgotten && id.as_deref().is_some_and(|i| t.name_of(i).is_none())
        {
            let _ = t.add("this browser's key", &pk);
        }
    }
    t
}

/// Stores the trusted keys.
pub fn save_trusted(t: &TrustedKeys) {
    if let Some(s) = web::storage() {
        let _ = s.set_item(TRUSTED_STORAGE, &t.to_json());
    }
}
