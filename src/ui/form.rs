//! The Run form's sections and fields, rendered from the core's form spec
//! ([`crate::core::pins::FIELD_SPECS`], [`crate::core::pins::sections`]): one section per
//! pin with its status badge and why it matters, each field with the control its values
//! call for and a provenance tag.

use leptos::prelude::*;

use crate::core::pins::{
    self, arrival_parts, arrival_text, field_spec, length_parts, length_reshape, length_text,
    provenance_tag, section_status, span_parts, span_text, wire_name, Control, LengthShape,
    PinError, RawConfig, RawField, RunConfig,
};

/// Sets field `name` of the form to `text`, declared.
fn set(form: RwSignal<RawConfig>, name: &'static str, text: String) {
    form.update(|f| {
        if let Some(field) = f.field_mut(name) {
            *field = RawField::declared(text);
        }
    })
}

/// The current text of field `name`.
fn text_of(form: RwSignal<RawConfig>, name: &'static str) -> String {
    form.with(|f| f.field(name).map(|x| x.text.clone()).unwrap_or_default())
}

/// The names of the fields the pin parser found missing or invalid.
fn problem_fields(p: &Result<RunConfig, PinError>) -> Vec<String> {
    match p {
        Ok(_) => Vec::new(),
        Err(e) => e.problems().iter().map(|q| q.field.clone()).collect(),
    }
}

/// Every section of the form. `extra` is rendered at the end of the endpoint section (the
/// API key).
pub fn sections_view(
    form: RwSignal<RawConfig>,
    pinned: Memo<Result<RunConfig, PinError>>,
    extra: AnyView,
) -> impl IntoView {
    let mut extra = Some(extra);
    // The fields the pin parser found missing or invalid, listed once per form change for
    // every section badge and field.
    let problems = Memo::new(move |_| pinned.with(problem_fields));
    pins::sections()
        .into_iter()
        .map(|section| {
            let pin = section.pin;
            let id = wire_name(&pin);
            let sec = section.clone();
            let status = Memo::new(move |_| {
                problems.with(|p| {
                    let names: Vec<&str> = p.iter().map(String::as_str).collect();
                    form.with(|f| section_status(f, &sec, &names))
                })
            });
            let fields = section
                .fields
                .iter()
                .map(|&name| field_view(form, problems, name))
                .collect_view();
            let more = (pin == pins::PinId::Endpoint).then(|| extra.take());
            let title = {
                let mut l = pin.label().to_owned();
                if let Some(c) = l.get_mut(0..1) {
                    c.make_ascii_uppercase();
                }
                l
            };
            view! {
                <fieldset class="pin-section" data-testid=format!("section-{id}") data-pin=pin.label()>
                    <legend class="pin-section__legend">
                        <span class="pin-section__title">{title}</span>
                        <span
                            class=move || format!("badge badge--{}", status.get().label())
                            data-testid=format!("badge-{id}")
                        >
                            {move || status.get().label()}
                        </span>
                    </legend>
                    <p class="pin-section__why">{pins::why(pin)}</p>
                    <div class="pin-section__fields">{fields} {more}</div>
                </fieldset>
            }
        })
        .collect_view()
}

/// One field: its label, control, unit, example and provenance tag.
fn field_view(
    form: RwSignal<RawConfig>,
    problems: Memo<Vec<String>>,
    name: &'static str,
) -> impl IntoView {
    let Some(spec) = field_spec(name) else {
        return ().into_any();
    };
    let id = format!("pin-{name}");
    let help_id = format!("help-{name}");
    let applies = Memo::new(move |_| form.with(|f| pins::applies(f, name)));
    let missing = move || problems.with(|p| p.iter().any(|f| f == name));
    let tag = Memo::new(move |_| {
        form.with(|f| {
            f.field(name)
                .map(|x| provenance_tag(&x.source))
                .unwrap_or(("declared", String::new()))
        })
    });
    let control = match spec.control {
        Control::Text | Control::Number { .. } => {
            let numeric = matches!(spec.control, Control::Number { .. });
            view! {
                <input
                    id=id.clone()
                    data-testid=id.clone()
                    class="field__input"
                    inputmode=numeric.then_some("decimal")
                    placeholder=spec.example
                    aria-describedby=help_id.clone()
                    aria-invalid=move || missing().then_some("true")
                    autocomplete="off"
                    spellcheck="false"
                    prop:value=move || text_of(form, name)
                    on:input=move |ev| set(form, name, event_target_value(&ev))
                />
            }
            .into_any()
        }
        Control::Choice(opts) => choice_view(form, name, &id, &help_id, opts).into_any(),
        Control::Length => length_view(form, name, &id, &help_id).into_any(),
        Control::Span => span_view(form, name, &id, &help_id).into_any(),
        Control::Arrival => arrival_view(form, name, &id, &help_id).into_any(),
    };
    let unit = match spec.control {
        Control::Number { unit } if !unit.is_empty() => Some(unit),
        Control::Length => Some("tokens"),
        _ => None,
    };
    let undisclose = Control::disclosable(name).then(|| {
        view! {
            <button
                type="button"
                class="field__undisclosed"
                data-testid=format!("undisclose-{name}")
                aria-label=format!("{}: the server does not disclose it", spec.label)
                on:click=move |_| set(form, name, "undisclosed".into())
            >
                "undisclosed"
            </button>
        }
    });
    view! {
        <div class="field" class:field--missing=missing hidden=move || !applies.get() data-field=name>
            <label class="field__label" for=id.clone()>{spec.label}</label>
            <div class="field__control">
                {control}
                {unit.map(|u| view! { <span class="field__unit">{u}</span> })}
                {undisclose}
                <span
                    class=move || format!("tag tag--{}", tag.get().0)
                    tabindex="0"
                    role="note"
                    title=move || tag.get().1
                    aria-label=move || format!("{}: {}", tag.get().0, tag.get().1)
                    data-testid=format!("source-{name}")
                >
                    {move || tag.get().0}
                    <span class="tag__tip" aria-hidden="true">{move || tag.get().1}</span>
                </span>
            </div>
            <p class="field__help" id=help_id>{format!("e.g. {}", spec.example)}</p>
        </div>
    }
    .into_any()
}

/// A fixed set of values: a select, with the current value kept even when it is not one
/// of them (a link may carry any text; the checklist then says what is wrong).
fn choice_view(
    form: RwSignal<RawConfig>,
    name: &'static str,
    id: &str,
    help_id: &str,
    opts: &'static [(&'static str, &'static str)],
) -> impl IntoView {
    let current = Memo::new(move |_| text_of(form, name).trim().to_owned());
    let other = move || {
        let c = current.get();
        (!c.is_empty() && !opts.iter().any(|(v, _)| v.eq_ignore_ascii_case(&c)))
            .then(|| view! { <option value=c.clone() selected=true>{c.clone()}</option> })
    };
    view! {
        <select
            id=id.to_owned()
            data-testid=id.to_owned()
            class="field__input"
            aria-describedby=help_id.to_owned()
            prop:value=move || current.get()
            on:change=move |ev| set(form, name, event_target_value(&ev))
        >
            <option value="" disabled=true selected=move || current.get().is_empty()>"choose…"</option>
            {opts
                .iter()
                .map(|&(v, label)| {
                    view! {
                        <option value=v selected=move || current.get().eq_ignore_ascii_case(v)>{label}</option>
                    }
                })
                .collect_view()}
            {other}
        </select>
    }
}

/// A length distribution: its shape, then its numbers (fixed: one; uniform: min, max;
/// normal: mean, std, min, max).
fn length_view(
    form: RwSignal<RawConfig>,
    name: &'static str,
    id: &str,
    help_id: &str,
) -> impl IntoView {
    let shape = Memo::new(move |_| length_parts(&text_of(form, name)).0);
    let parts = move || length_parts(&text_of(form, name)).1;
    let set_part = move |i: usize, v: String| {
        let (s, mut p) = length_parts(&text_of(form, name));
        if let Some(x) = p.get_mut(i) {
            *x = v;
        }
        set(form, name, length_text(s, &p));
    };
    let (id, help_id) = (id.to_owned(), help_id.to_owned());
    let shape_id = format!("shape-{name}");
    view! {
        <select
            class="field__shape"
            data-testid=shape_id.clone()
            aria-label="distribution"
            on:change=move |ev| {
                if let Some(s) = LengthShape::from_id(&event_target_value(&ev)) {
                    set(form, name, length_reshape(&text_of(form, name), s));
                }
            }
        >
            {LengthShape::ALL
                .into_iter()
                .map(|s| view! { <option value=s.id() selected=move || shape.get() == s>{s.id()}</option> })
                .collect_view()}
        </select>
        {move || {
            let s = shape.get();
            s.parts()
                .iter()
                .enumerate()
                .map(|(i, part)| {
                    let (tid, label) = if s == LengthShape::Fixed {
                        (id.clone(), None)
                    } else {
                        (format!("{id}-{part}"), Some(*part))
                    };
                    view! {
                        {label.map(|l| view! { <label class="field__part" for=tid.clone()>{l}</label> })}
                        <input
                            id=tid.clone()
                            data-testid=tid
                            class="field__input field__input--short"
                            inputmode="numeric"
                            aria-describedby=help_id.clone()
                            autocomplete="off"
                            prop:value=move || parts().get(i).cloned().unwrap_or_default()
                            on:input=move |ev| set_part(i, event_target_value(&ev))
                        />
                    }
                })
                .collect_view()
        }}
    }
}

/// A window: a number and its unit (requests or seconds).
fn span_view(
    form: RwSignal<RawConfig>,
    name: &'static str,
    id: &str,
    help_id: &str,
) -> impl IntoView {
    let seconds = Memo::new(move |_| span_parts(&text_of(form, name)).1);
    view! {
        <input
            id=id.to_owned()
            data-testid=id.to_owned()
            class="field__input field__input--short"
            inputmode="decimal"
            aria-describedby=help_id.to_owned()
            autocomplete="off"
            prop:value=move || span_parts(&text_of(form, name)).0
            on:input=move |ev| set(form, name, span_text(&event_target_value(&ev), seconds.get_untracked()))
        />
        <select
            class="field__shape"
            data-testid=format!("unit-{name}")
            aria-label="unit"
            on:change=move |ev| {
                let secs = event_target_value(&ev) == "s";
                let n = span_parts(&text_of(form, name)).0;
                set(form, name, span_text(&n, secs));
            }
        >
            <option value="requests" selected=move || !seconds.get()>"requests"</option>
            <option value="s" selected=move || seconds.get()>"seconds"</option>
        </select>
    }
}

/// An arrival process: Poisson, or gamma with its shape.
fn arrival_view(
    form: RwSignal<RawConfig>,
    name: &'static str,
    id: &str,
    help_id: &str,
) -> impl IntoView {
    let gamma = Memo::new(move |_| arrival_parts(&text_of(form, name)).0);
    let shape_id = format!("{id}-shape");
    view! {
        <select
            id=id.to_owned()
            data-testid=id.to_owned()
            class="field__input"
            aria-describedby=help_id.to_owned()
            on:change=move |ev| {
                let g = event_target_value(&ev) == "gamma";
                let shape = arrival_parts(&text_of(form, name)).1;
                let shape = if shape.is_empty() { "2".to_owned() } else { shape };
                set(form, name, arrival_text(g, &shape));
            }
        >
            <option value="" disabled=true selected=move || text_of(form, name).trim().is_empty()>"choose…"</option>
            <option value="poisson" selected=move || !gamma.get() && !text_of(form, name).trim().is_empty()>"Poisson"</option>
            <option value="gamma" selected=move || gamma.get()>"gamma (burstier below shape 1)"</option>
        </select>
        <Show when=move || gamma.get()>
            <label class="field__part" for=shape_id.clone()>"shape"</label>
            <input
                id=shape_id.clone()
                data-testid=shape_id.clone()
                class="field__input field__input--short"
                inputmode="decimal"
                prop:value=move || arrival_parts(&text_of(form, name)).1
                on:input=move |ev| set(form, name, arrival_text(true, &event_target_value(&ev)))
            />
        </Show>
    }
}
