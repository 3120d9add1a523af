//! Browser tests (wasm-bindgen-test in headless Chromium): the shell mounts and navigates,
//! and report signing and verification work in the browser exactly as natively.
#![cfg(target_arch = "wasm32")]

use pinbench::core::report::{self, Verification};
use pinbench::core::sign::KeyPair;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const SIGNED: &str = include_str!("fixtures/report_signed.json");

#[wasm_bindgen_test]
fn signed_fixture_verifies_in_the_browser() {
    let opened = report::open(SIGNED).expect("opens");
    assert!(
        matches!(opened.verification, Verification::Valid { .. }),
        "{:?}",
        opened.verification
    );
    assert_eq!(
        report::recompute(&opened.report).expect("recomputes"),
        vec![]
    );
}

#[wasm_bindgen_test]
fn tampered_fixture_fails_in_the_browser() {
    let tampered = SIGNED.replacen("\"t_send_us\":700", "\"t_send_us\":701", 1);
    assert_ne!(tampered, SIGNED);
    let opened = report::open(&tampered).expect("still parses");
    assert!(matches!(opened.verification, Verification::Invalid { .. }));
}

#[wasm_bindgen_test]
fn signing_in_the_browser_round_trips() {
    let mut rep = report::open(SIGNED).expect("opens").report;
    let key = KeyPair::from_secret([0x17; 32]);
    rep.sign(&key).expect("signs");
    let text = rep.to_json().expect("json");
    let opened = report::open(&text).expect("opens");
    assert_eq!(
        opened.verification,
        Verification::Valid {
            key_id: key.key_id(),
            public_key: key.public_key_base64()
        }
    );
    let flipped = text.replacen("\"created\":\"2026", "\"created\":\"2027", 1);
    assert!(matches!(
        report::open(&flipped).expect("opens").verification,
        Verification::Invalid { .. }
    ));
}

fn testid(root: &web_sys::Element, id: &str) -> web_sys::HtmlElement {
    root.query_selector(&format!("[data-testid=\"{id}\"]"))
        .expect("valid selector")
        .unwrap_or_else(|| panic!("no element with data-testid={id}"))
        .dyn_into()
        .expect("an HTML element")
}

#[wasm_bindgen_test]
async fn shell_mounts_and_navigates() {
    let document = web_sys::window()
        .expect("window")
        .document()
        .expect("document");
    let root = document.create_element("div").expect("div");
    document
        .body()
        .expect("body")
        .append_child(&root)
        .expect("append");
    let host: web_sys::HtmlElement = root.clone().dyn_into().expect("html element");
    let _handle = leptos::mount::mount_to(host, pinbench::ui::App);

    assert_eq!(
        testid(&root, "app-title").text_content().as_deref(),
        Some("pinbench")
    );
    assert_eq!(
        testid(&root, "section-title").text_content().as_deref(),
        Some("Run")
    );
    testid(&root, "nav-compare").click();
    leptos::task::tick().await;
    assert_eq!(
        testid(&root, "section-title").text_content().as_deref(),
        Some("Compare")
    );
    assert_eq!(
        testid(&root, "nav-compare")
            .get_attribute("aria-current")
            .as_deref(),
        Some("page")
    );
    assert_eq!(testid(&root, "nav-run").get_attribute("aria-current"), None);
}

/// Where the browser supports it, this browser's key is a non-extractable WebCrypto
/// Ed25519 key: it signs reports that verify exactly as natively signed ones, and its
/// secret is nowhere in page storage.
#[wasm_bindgen_test]
async fn the_browser_key_is_non_extractable_webcrypto_and_signs_valid_reports() {
    use pinbench::web::keystore::{signer, Signer};
    let s = signer().await.expect("a signer");
    assert!(matches!(s, Signer::WebCrypto { .. }), "{}", s.where_kept());
    let body = report::open(SIGNED).expect("opens").report.body;
    let signed = pinbench::core::lifecycle::sign_body(body, &s)
        .await
        .expect("signs");
    let (r, figures) = (signed.report, signed.figures);
    let opened = report::open(&r.to_json().expect("json")).expect("opens");
    match opened.verification {
        Verification::Valid { key_id, .. } => assert_eq!(key_id, s.key_id()),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        pinbench::core::card::check(&opened.report, Some(&figures)),
        pinbench::core::card::CardCheck::Matches
    );
    // Asked again, the same key (kept in IndexedDB).
    assert_eq!(signer().await.expect("again").key_id(), s.key_id());
}
