//! What a case's manifests say that its expectations may speak of: the Gateways, their listeners
//! and ports (a ListenerSet's ports count as its parent's), the ListenerSets and the routes. Read
//! once by the loader; [`super::expect`] checks every expectation against it.

use std::collections::{BTreeMap, BTreeSet};

use serde_saphyr::Location;

use super::manifests::{self, ListenerFacts, Object, ROUTE_KINDS};
use super::problem::{Ctx, Problem};
use crate::types::Port;

pub(super) struct Layout {
    /// The Gateway the expectations speak of (`gateway:`, or the default).
    pub(super) gateway: String,
    /// Whether any manifest was read: without one, no name is reported missing from them.
    pub(super) has_manifests: bool,
    /// Every Gateway's name.
    pub(super) gateways: BTreeSet<String>,
    /// Whether the manifests hold more than one Gateway.
    pub(super) several: bool,
    /// Every Gateway's listeners, by Gateway name.
    pub(super) by_gateway: BTreeMap<String, Vec<ListenerFacts>>,
    /// Listener keys expectations may use: `<listener>` with one Gateway, `<gateway>/<listener>`
    /// always.
    pub(super) listener_keys: BTreeSet<String>,
    /// ListenerSet ports, by parent Gateway.
    set_ports: BTreeMap<String, BTreeSet<Port>>,
    /// ListenerSet name -> its listeners' names.
    pub(super) listener_sets: BTreeMap<String, BTreeSet<String>>,
    pub(super) routes: BTreeMap<String, manifests::RouteFacts>,
    /// Known as soon as the Gateway exists: `listeners: []` (or listeners that could not be read,
    /// already a problem) must not switch the listener and port checks off.
    pub(super) knows_gateway: bool,
    /// Every object's `(kind, name)`: what a `refused:` key may name.
    pub(super) objects: BTreeSet<(String, String)>,
}

impl Layout {
    /// Reads the layout of `objects`; a Gateway `gateway` that is not there, or listeners that
    /// cannot be read, are problems (`gateway_at` locates the first).
    pub(super) fn read(cx: &mut Ctx, objects: &[Object], gateway: &str, gateway_at: Location, has_manifests: bool) -> Layout {
        let gateways: Vec<&Object> = objects.iter().filter(|o| o.kind == "Gateway").collect();
        if has_manifests && !gateways.iter().any(|o| o.name == gateway) {
            let found: Vec<&str> = gateways.iter().map(|o| o.name.as_str()).collect();
            cx.at(
                &gateway_at,
                "gateway",
                format!(
                    "no Gateway named {gateway:?} in the manifests (found: {}); name it `{{gateway}}` in the manifest or set `gateway:`",
                    if found.is_empty() { "none".into() } else { found.join(", ") }
                ),
            );
        }
        let mut by_gateway: BTreeMap<String, Vec<ListenerFacts>> = BTreeMap::new();
        for gw in &gateways {
            match manifests::gateway_listeners(gw) {
                Ok(l) => {
                    by_gateway.insert(gw.name.clone(), l);
                }
                Err(p) => cx.problems.push(Problem { file: p.file, line: p.line, column: p.column, field: p.field, message: p.message }),
            }
        }
        let several = gateways.len() > 1;
        let single_gateway = (!several).then_some(gateway);
        let mut listener_keys: BTreeSet<String> = BTreeSet::new();
        for (g, ls) in &by_gateway {
            for l in ls {
                listener_keys.insert(format!("{g}/{}", l.name));
                if !several {
                    listener_keys.insert(l.name.clone());
                }
            }
        }
        // A ListenerSet's ports are its parent Gateway's too (whether a version serves them is
        // what the expectations say).
        let mut set_ports: BTreeMap<String, BTreeSet<Port>> = BTreeMap::new();
        for o in objects.iter().filter(|o| o.kind == "ListenerSet") {
            let parent = o.value.pointer("/spec/parentRef/name").and_then(serde_json::Value::as_str).unwrap_or_default().to_string();
            for l in o.value.pointer("/spec/listeners").and_then(serde_json::Value::as_array).into_iter().flatten() {
                if let Some(p) = l.get("port").and_then(serde_json::Value::as_u64).and_then(|p| Port::new(p).ok()) {
                    set_ports.entry(parent.clone()).or_default().insert(p);
                }
            }
        }
        let listener_sets: BTreeMap<String, BTreeSet<String>> = objects
            .iter()
            .filter(|o| o.kind == "ListenerSet")
            .map(|o| {
                let names = o
                    .value
                    .pointer("/spec/listeners")
                    .and_then(serde_json::Value::as_array)
                    .map(|ls| ls.iter().filter_map(|l| l.get("name").and_then(serde_json::Value::as_str).map(str::to_string)).collect())
                    .unwrap_or_default();
                (o.name.clone(), names)
            })
            .collect();
        let routes: BTreeMap<String, manifests::RouteFacts> = objects
            .iter()
            .filter(|o| ROUTE_KINDS.contains(&o.kind.as_str()))
            .map(|o| (o.name.clone(), manifests::route_facts(o, single_gateway)))
            .collect();
        Layout {
            gateway: gateway.to_string(),
            has_manifests,
            knows_gateway: gateways.iter().any(|o| o.name == gateway),
            gateways: gateways.iter().map(|o| o.name.clone()).collect(),
            several,
            by_gateway,
            listener_keys,
            set_ports,
            listener_sets,
            routes,
            objects: objects.iter().map(|o| (o.kind.clone(), o.name.clone())).collect(),
        }
    }

    /// The ports of Gateway `g`: its listeners' and its ListenerSets'.
    pub(super) fn ports_of(&self, g: &str) -> BTreeSet<Port> {
        let mut ports: BTreeSet<Port> = self.by_gateway.get(g).map(|ls| ls.iter().map(|l| l.port).collect()).unwrap_or_default();
        ports.extend(self.set_ports.get(g).into_iter().flatten().copied());
        ports
    }

    pub(super) fn listener_names(&self) -> BTreeSet<&str> {
        self.listener_keys.iter().map(String::as_str).collect()
    }
}
