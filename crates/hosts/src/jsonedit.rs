//! Add or remove the one entry toolgate owns in a JSON file it shares with the user, keeping
//! every other key (and their order).

use serde_json::{Map, Value};

use crate::install::EntryKey;

/// The object at `container` (created as needed when `create`), as a `Value` (object or array).
fn container_mut<'a>(
    doc: &'a mut Value,
    container: &[String],
    array: bool,
) -> Option<&'a mut Value> {
    let mut cur = doc;
    for (i, key) in container.iter().enumerate() {
        let last = i + 1 == container.len();
        let obj = cur.as_object_mut()?;
        if !obj.contains_key(key) {
            let fresh = if last && array {
                Value::Array(Vec::new())
            } else {
                Value::Object(Map::new())
            };
            obj.insert(key.clone(), fresh);
        }
        cur = obj.get_mut(key)?;
    }
    Some(cur)
}

/// The current value of the entry, if present.
pub fn get<'a>(doc: &'a Value, container: &[String], key: &EntryKey) -> Option<&'a Value> {
    let mut cur = doc;
    for k in container {
        cur = cur.get(k)?;
    }
    match key {
        EntryKey::Object(name) => cur.as_object()?.get(name),
        EntryKey::ArrayName(name) => cur
            .as_array()?
            .iter()
            .find(|v| v.get("name").and_then(Value::as_str) == Some(name)),
    }
}

/// Set the entry to `value`. `Err` says why the document's shape does not allow it.
pub fn set(
    doc: &mut Value,
    container: &[String],
    key: &EntryKey,
    value: Value,
) -> Result<(), String> {
    let shape_err = || {
        format!(
            "\"{}\" is not {}",
            container.join("."),
            match key {
                EntryKey::Object(_) => "an object",
                EntryKey::ArrayName(_) => "an array",
            }
        )
    };
    if !doc.is_object() {
        return Err("the top level is not a JSON object".to_owned());
    }
    let array = matches!(key, EntryKey::ArrayName(_));
    let c = container_mut(doc, container, array).ok_or_else(shape_err)?;
    match key {
        EntryKey::Object(name) => {
            let obj = c.as_object_mut().ok_or_else(shape_err)?;
            obj.insert(name.clone(), value);
        }
        EntryKey::ArrayName(name) => {
            let arr = c.as_array_mut().ok_or_else(shape_err)?;
            match arr
                .iter_mut()
                .find(|v| v.get("name").and_then(Value::as_str) == Some(name))
            {
                Some(slot) => *slot = value,
                None => arr.push(value),
            }
        }
    }
    Ok(())
}

/// Remove the entry; `true` if it was there.
pub fn remove(doc: &mut Value, container: &[String], key: &EntryKey) -> bool {
    let mut cur = doc;
    for k in container {
        match cur.get_mut(k) {
            Some(next) => cur = next,
            None => return false,
        }
    }
    match key {
        EntryKey::Object(name) => cur
            .as_object_mut()
            .is_some_and(|o| o.shift_remove(name).is_some()),
        EntryKey::ArrayName(name) => match cur.as_array_mut() {
            Some(arr) => {
                let before = arr.len();
                arr.retain(|v| v.get("name").and_then(Value::as_str) != Some(name));
                arr.len() != before
            }
            None => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_other_keys_in_order() {
        let mut doc: Value =
            serde_json::from_str(r#"{"z":1,"servers":{"b":{"x":1},"a":{}},"inputs":[]}"#).unwrap();
        let key = EntryKey::Object("toolgate".into());
        let c = vec!["servers".to_owned()];
        set(&mut doc, &c, &key, json!({"command":"t"})).unwrap();
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            r#"{"z":1,"servers":{"b":{"x":1},"a":{},"toolgate":{"command":"t"}},"inputs":[]}"#
        );
        assert_eq!(get(&doc, &c, &key), Some(&json!({"command":"t"})));
        assert!(remove(&mut doc, &c, &key));
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            r#"{"z":1,"servers":{"b":{"x":1},"a":{}},"inputs":[]}"#
        );
        assert!(!remove(&mut doc, &c, &key));
    }

    #[test]
    fn array_entries_by_name() {
        let mut doc = json!({"plugins":[{"name":"mine"}]});
        let key = EntryKey::ArrayName("toolgate".into());
        let c = vec!["plugins".to_owned()];
        set(&mut doc, &c, &key, json!({"name":"toolgate","v":1})).unwrap();
        set(&mut doc, &c, &key, json!({"name":"toolgate","v":2})).unwrap();
        assert_eq!(
            doc,
            json!({"plugins":[{"name":"mine"},{"name":"toolgate","v":2}]})
        );
        assert!(remove(&mut doc, &c, &key));
        assert_eq!(doc, json!({"plugins":[{"name":"mine"}]}));
        let mut bad = json!({"plugins": {}});
        assert!(
            set(&mut bad, &c, &key, json!({}))
                .unwrap_err()
                .contains("array")
        );
        assert!(set(&mut json!([1]), &c, &key, json!({})).is_err());
    }
}
