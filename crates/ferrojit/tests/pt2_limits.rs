//! `LoadOptions`' bounds apply to `.pt2` programs as they do to TorchScript archives: the
//! pickle memory cap to the `torch.save` files a `.pt2` archive holds, and the archive
//! limits to its entries and records.

use std::path::PathBuf;

use ferrojit::{ArchiveLimits, Error, LoadOptions};

fn export_fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/export")
        .join(name)
}

#[test]
fn the_pickle_memory_cap_applies_to_a_pt2_pickled_weight() {
    let path = export_fixture("pickled_weight.pt2");
    ferrojit::load(&path).unwrap();
    let options = LoadOptions {
        max_pickle_memory: Some(64),
        ..LoadOptions::default()
    };
    let error = ferrojit::load_with_options(&path, &options)
        .err()
        .expect("a 64-byte pickle cap refuses the pickled weight");
    assert!(matches!(error, Error::Exported { .. }), "{error}");
    let message = error.to_string();
    assert!(
        message.contains("data/weights/weight_pickled_0"),
        "{message}"
    );
    assert_eq!(message.lines().count(), 1, "{message}");
}

#[test]
fn the_archive_limits_apply_to_a_pt2_archive() {
    let path = export_fixture("mlp.pt2");
    let options = LoadOptions {
        archive_limits: ArchiveLimits {
            max_entries: 4,
            ..ArchiveLimits::default()
        },
        ..LoadOptions::default()
    };
    let error = ferrojit::load_with_options(&path, &options)
        .err()
        .expect("a .pt2 of 13 entries is refused under a limit of 4");
    assert!(matches!(error, Error::Exported { .. }), "{error}");
    assert!(error.to_string().contains("mlp.pt2"), "{error}");
    let options = LoadOptions {
        archive_limits: ArchiveLimits {
            max_total_bytes: 1024,
            ..ArchiveLimits::default()
        },
        ..LoadOptions::default()
    };
    // The program's JSON alone is over 5 kB.
    assert!(ferrojit::load_with_options(&path, &options).is_err());
}
