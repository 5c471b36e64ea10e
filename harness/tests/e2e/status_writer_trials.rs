//! `status_writer::1.19.6::*`: `layout-gate status-writer` end to end at one pin: Cilium's own
//! operator on a control plane of the run's own (a warm folder of its own, so no warm plane is
//! used), the stand-in writing beside it, every route version recorded and judged.

use layout_gate::status_writer::judge::{self, Record};

const VERSION: &str = "1.19.6";

/// Cilium's entry first: the stand-in appends its own once and both are left alone, the route
/// settles. The stand-in's entry first: Cilium's merge (matched on parentRef alone, read at
/// the tag) writes into it, the stand-in restores it, and the route is still moving when the
/// window closes. The evidence carries every version, and each verdict is the judge's of its
/// record.
pub fn ciliums_merge_fights_an_entry_written_first() -> Result<(), String> {
    let pins = layout_gate::versions::Pins::load_default().map_err(|ps| format!("{ps:?}"))?;
    let v = layout_gate::case::CiliumVersion::parse(VERSION).map_err(|e| e.0)?;
    if let Some(why) = layout_gate::check::operator::not_runnable(&pins, &v) {
        return Err(why);
    }
    let (_tmp, out, o) = super::conformance_trials::on_a_plane_of_its_own(&["status-writer", "--cilium", VERSION, "--window", "10"])?;
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    let said = format!("{stdout}{}", String::from_utf8_lossy(&o.stderr));
    if !o.status.success() {
        return Err(format!("exit {:?}:\n{said}", o.status.code()));
    }
    if !stdout.contains("emulated: the second status writer: layout-gate's stand-in") || !stdout.contains("real: Cilium's operator") {
        return Err(format!("the output does not say what is real and what is emulated:\n{stdout}"));
    }
    let text = std::fs::read_to_string(out.join("status-writer.json")).map_err(|e| format!("status-writer.json: {e}\n{said}"))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    if json["lane"] != "operator" || json["cilium"] != VERSION {
        return Err(format!("status-writer.json: lane {}, cilium {}", json["lane"], json["cilium"]));
    }
    let routes = json["routes"].as_array().cloned().unwrap_or_default();
    let mut kinds = Vec::new();
    for r in &routes {
        let record: Record = serde_json::from_value(r["record"].clone()).map_err(|e| format!("a record: {e}"))?;
        let verdict = judge::judge(&record);
        if serde_json::to_value(&verdict).map_err(|e| e.to_string())? != r["verdict"] {
            return Err(format!("{} {}: the verdict is not its record's", record.kind, record.order));
        }
        let what = format!("{} {}: {}", record.kind, record.order, judge::summary(&record, &verdict));
        kinds.push((record.kind.clone(), record.order.clone()));
        match record.order.as_str() {
            "cilium-first" => {
                let ok = verdict.settled
                    && verdict.by_stand_in == 1
                    && verdict.cilium_entry == judge::Fate::Kept
                    && verdict.stand_in_entry == judge::Fate::Kept
                    && !verdict.cilium_wrote_into_stand_in_entry;
                if !ok {
                    return Err(format!("{what}\n{said}"));
                }
            }
            "stand-in-first" => {
                let ok = !verdict.settled
                    && verdict.moves_in_window >= 20
                    && verdict.by_cilium >= 10
                    && verdict.cilium_entry == judge::Fate::NeverWritten
                    && verdict.cilium_wrote_into_stand_in_entry;
                if !ok {
                    return Err(format!("{what}\n{said}"));
                }
            }
            other => return Err(format!("unknown order {other}")),
        }
    }
    kinds.sort();
    let want =
        [("HTTPRoute", "cilium-first"), ("HTTPRoute", "stand-in-first"), ("TLSRoute", "cilium-first"), ("TLSRoute", "stand-in-first")];
    if kinds.iter().map(|(k, o)| (k.as_str(), o.as_str())).collect::<Vec<_>>() != want {
        return Err(format!("routes measured: {kinds:?}"));
    }
    Ok(())
}
