//! JSON Schemas (draft 2020-12) of the documents gfxscan writes, generated from the types that
//! write them: one table of document kinds ([`Document`]), each with its root type and version.
//!
//! A schema describes what this version writes (schemars' serialization contract: a field left
//! out when empty is optional, an always-written one required), not everything it reads back
//! (version 1 snapshots). Objects stay open to fields a newer gfxscan adds.

use clap::ValueEnum;
use schemars::generate::SchemaSettings;
use schemars::transform::{transform_subschemas, Transform};
use schemars::{Schema, SchemaGenerator};
use serde_json::Value;

use crate::vocab::targets::TargetsDocument;

/// A kind of JSON document gfxscan writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum Document {
    /// `scan --json`: the snapshot (docs/schema.md).
    Snapshot,
    /// `check --json`: the verdicts per install and GPU.
    Check,
    /// `diff --json`: what changed between two installs or snapshots.
    Diff,
    /// `merge --json`: the fleet matrix of many snapshots.
    Merge,
    /// `scan --keep TARGETS --json`: the prune report.
    Prune,
    /// `explain TARGET --json`: one target's gate matrix.
    Explain,
    /// `targets --json`: the target table.
    Targets,
    /// `scan --format jsonl`, `check --format jsonl`: one line's record.
    Record,
}

impl Document {
    /// Every kind, in the table's order.
    pub fn all() -> &'static [Document] {
        Document::value_variants()
    }

    /// Its name, as the command line and the schema files spell it (`snapshot`).
    pub fn name(self) -> String {
        self.to_possible_value().map(|v| v.get_name().to_string()).unwrap_or_default()
    }

    /// The schema of the root type, and the `schema_version` its documents carry (`None` for a
    /// document without one).
    fn root(self, g: &mut SchemaGenerator) -> (Schema, Option<u32>) {
        use crate::{check, diff, merge, model};
        match self {
            Document::Snapshot => (g.root_schema_for::<model::Snapshot>(), Some(model::SCHEMA_VERSION)),
            Document::Check => (g.root_schema_for::<check::CheckReport>(), Some(check::CHECK_SCHEMA_VERSION)),
            Document::Diff => (g.root_schema_for::<diff::SnapshotDiff>(), Some(diff::DIFF_SCHEMA_VERSION)),
            Document::Merge => (g.root_schema_for::<merge::Fleet>(), Some(merge::MERGE_SCHEMA_VERSION)),
            Document::Prune => {
                (g.root_schema_for::<check::prune::PruneReport>(), Some(check::prune::PRUNE_SCHEMA_VERSION))
            }
            Document::Explain => (
                g.root_schema_for::<crate::explain::Explanation>(),
                Some(crate::explain::EXPLAIN_SCHEMA_VERSION),
            ),
            Document::Targets => (g.root_schema_for::<TargetsDocument<'static>>(), None),
            Document::Record => (g.root_schema_for::<crate::records::Record<'static>>(), None),
        }
    }

    /// The document's JSON Schema: draft 2020-12, named `urn:gfxscan:schema:<kind>`, its
    /// `schema_version` fixed to the one this version writes.
    pub fn schema(self) -> Schema {
        let settings = SchemaSettings::draft2020_12().for_serialize().with_transform(LeftOutIsNeverNull);
        let mut g = settings.into_generator();
        let (mut schema, version) = self.root(&mut g);
        let name = self.name();
        schema.insert("$id".into(), format!("urn:gfxscan:schema:{name}").into());
        let title = match version {
            Some(v) => format!("gfxscan {name} document, schema_version {v}"),
            None => format!("gfxscan {name} document"),
        };
        schema.insert("title".into(), title.into());
        let field = schema.get_mut("properties").and_then(|p| p.get_mut("schema_version"));
        if let (Some(Value::Object(field)), Some(v)) = (field, version) {
            field.insert("const".into(), v.into());
        }
        schema
    }
}

pub use crate::model::MapKeyedBy;

/// A field written only when set (`skip_serializing_if`, so not `required` in the serialization
/// contract) is never `null`: every such `Option` is skipped with `Option::is_none`. schemars
/// still types it "T or null"; this takes the `null` out, so a written `null` fails.
#[derive(Debug, Clone)]
struct LeftOutIsNeverNull;

impl Transform for LeftOutIsNeverNull {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let required: Vec<Value> = match schema.get("required") {
            Some(Value::Array(r)) => r.clone(),
            _ => Vec::new(),
        };
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            for (name, field) in properties.iter_mut() {
                if !required.contains(&Value::String(name.clone())) {
                    not_null(field);
                }
            }
        }
    }
}

/// `field` without its `null` alternative: `"type": ["T", "null"]` becomes `"type": "T"`, and
/// `"anyOf": [{"$ref": …}, {"type": "null"}]` the `$ref` alone.
fn not_null(field: &mut Value) {
    let Value::Object(field) = field else { return };
    let null = Value::String("null".into());
    if let Some(Value::Array(types)) = field.get_mut("type") {
        types.retain(|t| *t != null);
        if let [one] = types.as_slice() {
            let one = one.clone();
            field.insert("type".into(), one);
        }
    }
    let Some(Value::Array(any)) = field.get_mut("anyOf") else { return };
    any.retain(|s| s.get("type") != Some(&null));
    if let [Value::Object(one)] = any.as_slice() {
        let one = one.clone();
        field.remove("anyOf");
        field.extend(one);
    }
}

#[cfg(test)]
mod tests {
    use super::Document;

    /// Each document's schema names its kind and fixes the version the document carries.
    #[test]
    fn each_schema_names_its_kind_and_version() {
        for &kind in Document::all() {
            let s = kind.schema();
            assert_eq!(s.get("$id"), Some(&format!("urn:gfxscan:schema:{}", kind.name()).into()));
            assert_eq!(s.get("$schema"), Some(&"https://json-schema.org/draft/2020-12/schema".into()));
            let version = s.get("properties").and_then(|p| p.get("schema_version"));
            let versioned = !matches!(kind, Document::Targets | Document::Record);
            assert_eq!(version.is_some(), versioned, "{kind:?}");
        }
        let snap = Document::Snapshot.schema();
        let version =
            snap.get("properties").and_then(|p| p.get("schema_version")).and_then(|v| v.get("const"));
        assert_eq!(version, Some(&crate::model::SCHEMA_VERSION.into()));
    }

    /// A field always written keeps its `null` (`kernels`: not known); one left out when unset
    /// loses it (`generic_version`), whether typed inline or by reference (`artifact`).
    #[test]
    fn only_fields_left_out_when_unset_lose_their_null() {
        let snap = serde_json::to_value(Document::Snapshot.schema()).expect("a schema is JSON");
        let code = &snap["$defs"]["CodeObjectRecord"]["properties"];
        assert_eq!(code["kernels"]["type"], serde_json::json!(["integer", "null"]));
        assert_eq!(code["generic_version"]["type"], "integer");
        let file = &snap["$defs"]["FileRecord"]["properties"];
        assert_eq!(file["artifact"]["$ref"], "#/$defs/Artifact");
        assert!(file["artifact"].get("anyOf").is_none(), "{}", file["artifact"]);
    }
}
