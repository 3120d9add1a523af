//! The API key field: the key lives in memory unless the user ticks "remember" (and a
//! run started by a link never sees a remembered one). A key is tied to the endpoint
//! origin it was entered for: a remembered one is used only for that origin, and changing
//! the endpoint (by hand or by a link) clears it.

use leptos::prelude::*;

use crate::core::lifecycle::ApiKey;
use crate::core::pins::{self, RawConfig};
use crate::web::store;

/// The API key, the origin it was typed for, and the field's state.
#[derive(Clone, Copy)]
pub struct ApiKeyField {
    api_key: RwSignal<String>,
    key_origin: RwSignal<Option<String>>,
    key_note: RwSignal<String>,
    remember: RwSignal<bool>,
    form: RwSignal<RawConfig>,
}

impl ApiKeyField {
    /// The field for the form's endpoint; `autorun`: a run started by a link.
    pub fn new(form: RwSignal<RawConfig>, autorun: bool) -> Self {
        let endpoint_origin = move || form.with(|f| pins::origin_of(&f.endpoint_url.text));
        // The API key lives in memory unless the user ticks "remember" (and a link-started
        // run never sees a remembered one).
        // A key is tied to the endpoint origin it was entered for: a remembered one is used
        // only for that origin, and changing the endpoint (by hand or by a link) clears it.
        let stored_key = (!autorun).then(store::remembered_api_key).flatten();
        let remember = RwSignal::new(stored_key.is_some());
        let key_note = RwSignal::new(String::new());
        let (first_key, first_origin) = match stored_key {
            Some((o, k)) if Some(&o) == endpoint_origin().as_ref() => (k, Some(o)),
            Some((o, _)) => {
                key_note.set(format!(
                    "A key is remembered for {o}; it is not sent to this endpoint. Type a key for it."
                ));
                (String::new(), None)
            }
            None => (String::new(), None),
        };
        let api_key = RwSignal::new(first_key);
        let key_origin = RwSignal::new(first_origin);
        Effect::new(move |_| {
            let now = endpoint_origin();
            let tied = key_origin.get_untracked();
            if tied.is_some() && tied != now && !api_key.get_untracked().is_empty() {
                api_key.set(String::new());
                key_origin.set(None);
                key_note.set(format!(
                    "The API key was entered for {}; it is not sent to {}. Type it again to use it there.",
                    tied.unwrap_or_default(),
                    now.unwrap_or_else(|| "this endpoint".into())
                ));
            } else if api_key.get_untracked().is_empty() && !autorun {
                // Back at the endpoint a key is remembered for: it comes back.
                if let Some((o, k)) =
                    store::remembered_api_key().filter(|(o, _)| Some(o) == now.as_ref())
                {
                    api_key.set(k);
                    key_origin.set(Some(o));
                    key_note.set(String::new());
                }
            }
        });
        Effect::new(move |_| {
            let (keep, key, origin) = (remember.get(), api_key.get(), key_origin.get());
            if autorun {
                return;
            }
            match (keep, origin) {
                (true, Some(o)) if !key.is_empty() => store::remember_api_key(Some((&o, &key))),
                (true, _) => {}
                (false, _) => store::remember_api_key(None),
            }
        });
        Self {
            api_key,
            key_origin,
            key_note,
            remember,
            form,
        }
    }

    /// The key, if one was typed for `url`'s origin.
    pub fn for_url(&self, url: &str) -> Option<ApiKey> {
        ApiKey::for_endpoint(
            &self.api_key.get_untracked(),
            &self.key_origin.get_untracked().unwrap_or_default(),
        )
        .filter(|k| k.for_url(url).is_some())
    }

    /// The field's markup (in the endpoint's section of the form).
    pub fn view(self) -> AnyView {
        let Self {
            api_key,
            key_origin,
            key_note,
            remember,
            form,
        } = self;
        let endpoint_origin = move || form.with(|f| pins::origin_of(&f.endpoint_url.text));
        view! {
            <div class="field" data-field="api_key">
                <label class="field__label" for="api-key">"API key"</label>
                <div class="field__control">
                    <input id="api-key" class="field__input" type="password" data-testid="api-key" autocomplete="off" aria-describedby="api-key-help" prop:value=move || api_key.get() on:input=move |ev| {
                        api_key.set(event_target_value(&ev));
                        key_origin.set(endpoint_origin());
                        key_note.set(String::new());
                    } />
                </div>
                <p class="field__help" id="api-key-help">"Kept in memory and sent only to the origin it was typed for; never in reports or links."</p>
                <p class="pin__note" data-testid="api-key-note" role="status">{move || key_note.get()}</p>
                <label class="field__check">
                    <input type="checkbox" data-testid="remember-key" prop:checked=move || remember.get() on:change=move |ev| remember.set(event_target_checked(&ev)) />
                    " remember in this browser"
                </label>
            </div>
        }
            .into_any()
    }
}
