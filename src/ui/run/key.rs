//! The signing key panel: which key signs this tab's reports and where it is kept; export
//! (a software key only) and import (a key file or a bare base64 secret).

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::core::sign::KeyPair;
use crate::web::{self, keystore, store};

/// The signing key panel of the Run screen.
#[component]
pub fn SigningKeyPanel() -> impl IntoView {
    let key_id = RwSignal::new(String::new());
    let key_where = RwSignal::new(String::new());
    spawn_local(async move {
        match keystore::signer().await {
            Ok(s) => {
                key_id.set(s.key_id());
                key_where.set(s.where_kept().into());
            }
            Err(e) => key_id.set(e),
        }
    });
    let key_import = RwSignal::new(String::new());
    let key_msg = RwSignal::new(String::new());
    let on_key_export = move |_| {
        // Only a software key can be exported: a WebCrypto key's secret cannot be read.
        let k = match store::existing_signing_key() {
            Some(k) if key_id.get_untracked() == k.key_id() => k,
            _ => {
                return key_msg.set(
                    "This browser's key is a non-extractable WebCrypto key: its secret cannot be exported. Import a key to sign with one you can carry.".into(),
                )
            }
        };
        if let Err(e) = web::download(
            "pinbench-signing-key.json",
            "application/json",
            &k.to_key_file(),
        ) {
            key_msg.set(format!("Export failed: {e}"));
        }
    };
    let on_key_import = move |_| match KeyPair::from_key_file(&key_import.get_untracked()) {
        Ok(k) => match store::keep_signing_key(&k) {
            Ok(()) => {
                key_id.set(k.key_id());
                key_where.set(keystore::Signer::Software(k.clone()).where_kept().into());
                key_import.set(String::new());
                key_msg.set("Key imported. Reports it signs are not trusted by this browser until you add its public key to the trusted keys (Reports screen).".into());
            }
            Err(e) => key_msg.set(e),
        },
        Err(e) => key_msg.set(format!("Not a signing key: {e}")),
    };
    view! {
        <div class="panel">
            <h3 class="panel__title">"Signing key"</h3>
            <div class="run__key" role="group" aria-label="Signing key">
                <p>
                    <span data-testid="key-id" title=move || key_where.get()>{move || format!("signing key {}", key_id.get())}</span>
                    " · "
                    <span class="pin__note" data-testid="key-where">{move || key_where.get()}</span>
                </p>
                <button type="button" class="btn" data-testid="key-export" on:click=on_key_export>"Export signing key"</button>
                <label for="key-import">"Import a signing key (exported JSON or base64 secret)"</label>
                <input id="key-import" class="field__input" type="password" data-testid="key-import" autocomplete="off" prop:value=move || key_import.get() on:input=move |ev| key_import.set(event_target_value(&ev)) />
                <button type="button" class="btn" data-testid="key-import-button" on:click=on_key_import>"Import"</button>
                <span data-testid="key-message" role="status">{move || key_msg.get()}</span>
            </div>
        </div>
    }
}
