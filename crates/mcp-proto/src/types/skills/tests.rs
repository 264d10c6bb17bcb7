//! The host's rules for skill entries and the files read for them: one test per rule, each checked to fail when the rule is broken.

use proptest::prelude::*;
use serde_json::json;

use super::*;

const BODY: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\nSkill body.\n";
const FORMS: &str = "Supporting content.\n";

fn entry() -> Skill {
    serde_json::from_value(json!({
        "uri": "skill://pdf-processing/SKILL.md",
        "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
        "resources": [
            {"uri": "skill://pdf-processing/SKILL.md", "digest": sha256_digest(BODY.as_bytes()), "size": BODY.len()},
            {"uri": "skill://pdf-processing/references/FORMS.md", "digest": sha256_digest(FORMS.as_bytes()), "size": FORMS.len()}
        ]
    }))
    .unwrap()
}

#[test]
fn a_valid_entry_and_its_files_verify() {
    let skill = entry();
    skill.check_entry().unwrap();
    skill
        .verify_file("skill://pdf-processing/SKILL.md", BODY.as_bytes())
        .unwrap();
    skill
        .verify_file(
            "skill://pdf-processing/references/FORMS.md",
            FORMS.as_bytes(),
        )
        .unwrap();
    skill.verify_frontmatter(BODY).unwrap();
    assert_eq!(skill.uri_name(), Some("pdf-processing"));
}

#[test]
fn the_manifest_round_trips_in_each_form() {
    let skill = entry();
    let back: Skill = serde_json::from_value(serde_json::to_value(&skill).unwrap()).unwrap();
    assert_eq!(back, skill);
    let dynamic: Skill = serde_json::from_value(json!({
        "uri": "skill://daily/SKILL.md",
        "frontmatter": {"name": "daily", "description": "d"},
        "resources": "dynamic"
    }))
    .unwrap();
    assert_eq!(dynamic.resources, SkillFiles::Dynamic);
    assert_eq!(
        serde_json::to_value(&dynamic).unwrap()["resources"],
        "dynamic"
    );
    dynamic.check_entry().unwrap();
}

#[test]
fn entries_without_a_valid_manifest_are_not_loadable() {
    for resources in [json!(null), json!("static"), json!(7), json!([{"uri": 1}])] {
        let mut value = serde_json::to_value(entry()).unwrap();
        value["resources"] = resources.clone();
        let skill: Skill = serde_json::from_value(value).unwrap();
        assert!(
            matches!(skill.resources, SkillFiles::Invalid(_)),
            "{resources}"
        );
        assert_eq!(
            skill.check_entry().unwrap_err().code(),
            "skill_invalid_entry"
        );
    }
    let mut value = serde_json::to_value(entry()).unwrap();
    value.as_object_mut().unwrap().remove("resources");
    let skill: Skill = serde_json::from_value(value).unwrap();
    assert_eq!(
        skill.check_entry().unwrap_err().code(),
        "skill_invalid_entry"
    );
}

#[test]
fn an_entry_breaking_a_structural_rule_is_refused_with_the_reason() {
    type Break = fn(&mut Value);
    let cases: [(&str, Break); 6] = [
        ("does not end in /SKILL.md", |v| {
            v["uri"] = json!("skill://pdf-processing/README.md")
        }),
        ("frontmatter says", |v| {
            v["frontmatter"]["name"] = json!("other")
        }),
        ("outside the skill's directory", |v| {
            v["resources"][1]["uri"] = json!("skill://elsewhere/secret.md")
        }),
        ("twice", |v| {
            v["resources"][1]["uri"] = json!("skill://pdf-processing/SKILL.md")
        }),
        ("not sha256", |v| {
            v["resources"][1]["digest"] = json!("sha256:ABC")
        }),
        ("do not include its own SKILL.md", |v| {
            v["resources"][0]["uri"] = json!("skill://pdf-processing/OTHER.md")
        }),
    ];
    for (words, break_it) in cases {
        let mut value = serde_json::to_value(entry()).unwrap();
        break_it(&mut value);
        let skill: Skill = serde_json::from_value(value).unwrap();
        let error = skill.check_entry().unwrap_err();
        assert!(error.to_string().contains(words), "{words}: {error}");
    }
}

#[test]
fn the_limits_are_checked_from_the_entry_alone() {
    let mut many = entry();
    let SkillFiles::Listed(files) = &mut many.resources else {
        unreachable!()
    };
    for i in 0..MAX_SKILL_FILES {
        files.push(SkillResource {
            uri: format!("skill://pdf-processing/f{i}"),
            digest: sha256_digest(b""),
            size: 0,
            extra: JsonObject::new(),
        });
    }
    assert_eq!(many.check_entry().unwrap_err().code(), "skill_too_large");
    let mut big = entry();
    let SkillFiles::Listed(files) = &mut big.resources else {
        unreachable!()
    };
    files[1].size = MAX_SKILL_BYTES;
    assert_eq!(big.check_entry().unwrap_err().code(), "skill_too_large");
    // Exactly at the limit is accepted.
    let mut edge = entry();
    let SkillFiles::Listed(files) = &mut edge.resources else {
        unreachable!()
    };
    files[1].size = MAX_SKILL_BYTES - BODY.len() as u64;
    edge.check_entry().unwrap();
}

#[test]
fn tampered_resized_and_unlisted_files_are_not_used() {
    let skill = entry();
    let evil = BODY.replace("Skill body.", "Evil body!!");
    assert_eq!(evil.len(), BODY.len());
    assert_eq!(
        skill
            .verify_file("skill://pdf-processing/SKILL.md", evil.as_bytes())
            .unwrap_err()
            .code(),
        "skill_digest_mismatch"
    );
    let longer = format!("{BODY}extra bytes the entry did not account for\n");
    let error = skill
        .verify_file("skill://pdf-processing/SKILL.md", longer.as_bytes())
        .unwrap_err();
    assert_eq!(error.code(), "skill_size_mismatch");
    assert!(
        error
            .to_string()
            .contains(&format!("where the skill's entry lists {}", BODY.len()))
    );
    assert_eq!(
        skill
            .verify_file("skill://pdf-processing/scripts/run.sh", b"")
            .unwrap_err()
            .code(),
        "skill_unlisted_file"
    );
}

#[test]
fn frontmatter_is_compared_field_by_field() {
    let skill = entry();
    let changed = BODY.replace(
        "description: Extract, fill, and assemble PDF documents",
        "description: Exfiltrate credentials",
    );
    let error = skill.verify_frontmatter(&changed).unwrap_err();
    assert_eq!(error.code(), "skill_frontmatter_mismatch");
    assert!(error.to_string().contains("`description`"), "{error}");
    // A field only in the file, or only in the entry, is a difference.
    let extra = BODY.replace("---\nSkill", "license: MIT\n---\nSkill");
    assert!(skill.verify_frontmatter(&extra).is_err());
    let mut more = entry();
    more.frontmatter.insert("license".into(), json!("MIT"));
    assert!(more.verify_frontmatter(BODY).is_err());
    more.verify_frontmatter(&extra).unwrap();
    // No frontmatter at all.
    assert!(skill.verify_frontmatter("Skill body.\n").is_err());
    assert!(
        skill
            .verify_frontmatter("---\nname: pdf-processing\n")
            .is_err()
    );
}

#[test]
fn frontmatter_values_compare_as_data_not_text() {
    let mut skill = entry();
    skill.frontmatter.insert(
        "metadata".into(),
        json!({"version": "2.1.0", "weight": 1.5, "count": 3, "tags": ["a", "b"]}),
    );
    let text = "\u{feff}---\r\nname: pdf-processing\r\ndescription: \"Extract, fill, and assemble PDF documents\"\r\nmetadata:\r\n  count: 3\r\n  tags: [a, b]\r\n  weight: 1.5\r\n  version: '2.1.0'\r\n---\r\nBody\r\n";
    skill.verify_frontmatter(text).unwrap();
    let other = text.replace("count: 3", "count: 4");
    assert!(skill.verify_frontmatter(&other).is_err());
}

#[test]
fn the_capability_is_read_from_extensions() {
    let caps: ServerCapabilities = serde_json::from_value(json!({
        "resources": {},
        "extensions": {"io.modelcontextprotocol/skills": {"directoryRead": true}}
    }))
    .unwrap();
    assert_eq!(caps.skills().unwrap().directory_read, Some(true));
    let none: ServerCapabilities = serde_json::from_value(json!({"resources": {}})).unwrap();
    assert!(none.skills().is_none());
    let odd: ServerCapabilities = serde_json::from_value(json!({
        "extensions": {"io.modelcontextprotocol/skills": true}
    }))
    .unwrap();
    assert!(odd.skills().is_none());
}

proptest! {
    /// Any change to a file's bytes is caught, by its size or its digest.
    #[test]
    fn any_changed_byte_is_caught(index in 0..FORMS.len(), byte in any::<u8>()) {
        let mut bytes = FORMS.as_bytes().to_vec();
        prop_assume!(bytes[index] != byte);
        bytes[index] = byte;
        let error = entry()
            .verify_file("skill://pdf-processing/references/FORMS.md", &bytes)
            .unwrap_err();
        prop_assert_eq!(error.code(), "skill_digest_mismatch");
    }

    /// Server text in an error is bounded and shows no control characters.
    #[test]
    fn errors_are_bounded_and_escaped(name in "\\PC{0,300}[\u{1b}\u{7}]") {
        let mut skill = entry();
        skill.frontmatter.insert("name".into(), json!(name));
        let error = skill.check_entry().unwrap_err().to_string();
        let clean = !error.contains('\u{1b}') && !error.contains('\u{7}');
        prop_assert!(clean, "{}", error);
        prop_assert!(error.len() < 800);
    }
}
