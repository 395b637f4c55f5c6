#include "lib/planner/plan_drawing.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/plan/grad_blocks.hpp"
#include "lib/planner/simulator.hpp"

namespace eth::planner {
namespace {

// Layout in pixels. Stage boxes are at least kMinBox wide so that their text fits; the legend
// says so, since that floor bends proportionality for very short stages.
constexpr double kMargin = 16, kLabel = 150, kPlot = 1000, kMinBox = 270, kGap = 4;
constexpr double kLine = 15, kStrip = 17, kRow = 17;

// Tableau 10: distinguishable, and dark text stays readable on their light tints.
const char* device_colour(int type) {
  static const char* palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                  "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return palette[type % 10];
}

const char* kind_colour(SimSpan::Kind kind) {
  switch (kind) {
    case SimSpan::Kind::forward: return "#9ecae1";
    case SimSpan::Kind::backward: return "#3182bd";
    case SimSpan::Kind::reduction: return "#a50f15";  // not a device type's orange
    case SimSpan::Kind::gather: return "#9e9ac8";
    case SimSpan::Kind::optimizer: return "#969696";
  }
  return "#000";
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// Text at (x, y), baseline; `extra` adds attributes (weight, anchor, fill).
std::string text(double x, double y, const std::string& s, const std::string& extra = "") {
  return strprintf("<text x=\"%.1f\" y=\"%.1f\"%s>%s</text>\n", x, y, extra.c_str(), escape(s).c_str());
}

// A rectangle with a tooltip.
std::string rect(double x, double y, double w, double h, const std::string& fill, const std::string& tip,
                 const std::string& extra = "") {
  return strprintf("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"%s><title>%s</title></rect>\n", x, y,
                   w, h, fill.c_str(), extra.c_str(), escape(tip).c_str());
}

// A nested <svg> clips what it holds to its box: long text never spills into a neighbour.
std::string clipped(double x, double y, double w, double h, const std::string& inner) {
  return strprintf("<svg x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">\n%s</svg>\n", x, y, w, h, inner.c_str());
}

// A round tick spacing giving about `ticks` ticks over [0, span].
double tick_step(double span, int ticks) {
  const double raw = std::max(span, 1e-9) / ticks, mag = std::pow(10, std::floor(std::log10(raw)));
  for (double f : {1.0, 2.0, 5.0})
    if (f * mag >= raw) return f * mag;
  return 10 * mag;
}

std::string reduction_name(const Reduction& r, int num_layers) {
  if (r.unit_begin == Reduction::kTiedSum) return "tied embedding";
  if (r.unit_begin == Reduction::kTiedGather) return "tied embedding's late rows";
  return units_name(r.unit_begin, r.unit_end, num_layers);
}

// Everything one drawing needs, computed once.
struct Scene {
  const CostModel& cost;
  const Plan& plan;
  Simulation sim;
  std::vector<SimSpan> timeline;
  Estimate estimate;
  std::vector<Reduction> reductions;
  std::vector<RankRole> roles;
  std::vector<double> compute_ms;  // per rank: its stage's simulated forward + backward per step
};

std::string legend(const Scene& sc, double y) {
  const Topology& topo = sc.cost.topology();
  std::string out = text(kMargin, y + 11, "device types:", " font-weight=\"bold\"");
  double x = kMargin + 95;
  for (size_t t = 0; t < topo.device_types.size(); t++) {
    const DeviceType& d = topo.device_types[t];
    out += rect(x, y, 14, 14, device_colour(static_cast<int>(t)), d.name);
    const std::string label = strprintf("%s (%g GB)", d.name.c_str(), d.memory_gb);
    out += text(x + 19, y + 11, label);
    x += 19 + 7.0 * label.size() + 18;
  }
  out += text(kMargin, y + 30,
              strprintf("Box width: the stage's simulated forward + backward per step (at least %.0f px). Each rank: "
                        "device, samples per micro-batch, predicted peak / device memory.", kMinBox),
              " fill=\"#444\"");
  return out;
}

// One stage's box: its header, then one strip per rank in its device type's colour.
std::string stage_box(const Scene& sc, const PlanPipeline& pipe, int s, double x, double y, double w, double h) {
  const Topology& topo = sc.cost.topology();
  const PlanStage& st = pipe.stages[s];
  std::string inner = rect(0.5, 0.5, w - 1, h - 1, "#fff", "stage", " stroke=\"#333\"");
  // The blocks beside the layers: the embedding on a first stage, the final norm and LM head
  // (whose V x C matmul can outweigh several layers) on a last one.
  const ModelConfig& m = sc.cost.model();
  const std::string ends = std::string(st.layers.begin == 0 ? " + embedding" : "") +
                           (st.layers.end == m.num_layers ? (m.tied_head ? " + head (tied)" : " + head") : "");
  inner += text(6, kLine, strprintf("stage %d: layers [%d, %d)%s", s, st.layers.begin, st.layers.end, ends.c_str()),
                " font-weight=\"bold\"");
  inner += text(6, 2 * kLine, strprintf("%.1f ms/step%s", sc.compute_ms[st.ranks.front()],
                                        st.recompute == Recompute::none ? "" : (", recompute " + to_string(st.recompute)).c_str()));
  for (size_t i = 0; i < st.ranks.size(); i++) {
    const int r = st.ranks[i];
    const DeviceType& dev = topo.device_of(r);
    const double sy = 2 * kLine + 6 + i * kStrip;
    const int samples = st.split.empty() ? pipe.micro_batch : st.split[i];
    const std::string line = strprintf("rank %d  %s  %d sample%s  %.2f/%g GB", r, dev.name.c_str(), samples,
                                       samples == 1 ? "" : "s", sc.estimate.memory_gb[r], dev.memory_gb);
    inner += rect(3, sy, w - 6, kStrip - 2, device_colour(topo.ranks[r].device_type), line, " fill-opacity=\"0.45\"");
    inner += text(7, sy + 12, line);
  }
  return clipped(x, y, w, h, inner);
}

// One row per pipeline, then the idle ranks; returns the y below them.
double draw_pipelines(const Scene& sc, double y, double& width, std::string& out) {
  double longest = 0;
  for (const PlanPipeline& pipe : sc.plan.pipelines) {
    double row = 0;
    for (const PlanStage& st : pipe.stages) row += sc.compute_ms[st.ranks.front()];
    longest = std::max(longest, row);
  }
  const double scale = kPlot / std::max(longest, 1e-9);
  for (size_t p = 0; p < sc.plan.pipelines.size(); p++) {
    const PlanPipeline& pipe = sc.plan.pipelines[p];
    size_t widest = 1;
    for (const PlanStage& st : pipe.stages) widest = std::max(widest, st.ranks.size());
    const double h = 2 * kLine + 10 + widest * kStrip;
    out += text(kMargin, y + kLine, strprintf("pipeline %zu", p), " font-weight=\"bold\"");
    out += text(kMargin, y + 2 * kLine, strprintf("%d samples", pipe.samples()));
    out += text(kMargin, y + 3 * kLine, strprintf("%d x %d micro-batches", pipe.micro_batch, pipe.micro_batches));
    out += text(kMargin, y + 4 * kLine, strprintf("simulated %.1f ms", sc.sim.pipeline_ms[p]));
    double x = kMargin + kLabel;
    for (size_t s = 0; s < pipe.stages.size(); s++) {
      const double w = std::max(kMinBox, sc.compute_ms[pipe.stages[s].ranks.front()] * scale);
      out += stage_box(sc, pipe, static_cast<int>(s), x, y, w, h);
      x += w + kGap;
    }
    width = std::max(width, x + kMargin);
    y += std::max(h, 4 * kLine + 6) + 10;
  }
  if (!sc.plan.idle.empty()) {
    out += text(kMargin, y + kLine, "idle ranks", " font-weight=\"bold\"");
    double x = kMargin + kLabel;
    for (int r : sc.plan.idle) {
      if (x + 170 > kMargin + kLabel + kPlot) {  // wrap: a cluster may idle many devices
        x = kMargin + kLabel;
        y += kStrip + 8;
      }
      const DeviceType& dev = sc.cost.topology().device_of(r);
      const std::string line = strprintf("rank %d  %s  idle", r, dev.name.c_str());
      out += rect(x, y, 170, kStrip + 4, device_colour(sc.cost.topology().ranks[r].device_type), line,
                  " fill-opacity=\"0.2\" stroke=\"#999\" stroke-dasharray=\"4 3\"");
      out += text(x + 6, y + 14, line, " fill=\"#555\"");
      x += 170 + kGap;
    }
    width = std::max(width, x + kMargin);
    y += kStrip + 14;
  }
  return y;
}

// The simulated step: an axis in ms, then one row per rank with its spans, `plot` pixels wide.
double draw_timeline(const Scene& sc, double y, double plot, std::string& out) {
  const double total = std::max(sc.sim.iteration_ms, 1e-9), scale = plot / total, x0 = kMargin + kLabel;
  const int L = sc.cost.model().num_layers;
  out += text(kMargin, y + 12, strprintf("simulated step: %.1f ms (1F1B forward and backward by micro-batch, block "
                                         "reductions, AdamW; gaps are waits for transfers)", sc.sim.iteration_ms),
              " font-weight=\"bold\"");
  y += 22;
  double lx = x0;
  for (auto [kind, name] : {std::pair{SimSpan::Kind::forward, "forward"}, {SimSpan::Kind::backward, "backward"},
                            {SimSpan::Kind::reduction, "block reduction"}, {SimSpan::Kind::gather, "shard all-gather"},
                            {SimSpan::Kind::optimizer, "AdamW"}}) {
    out += rect(lx, y, 14, 12, kind_colour(kind), name);
    out += text(lx + 18, y + 10, name);
    lx += 18 + 7.0 * std::string(name).size() + 16;
  }
  y += 38;
  const double step = tick_step(total, std::max(8, static_cast<int>(plot / 130)));
  const int world = sc.cost.topology().world_size();
  const double bottom = y + world * kRow;
  for (double t = 0; t <= total + 1e-9; t += step) {
    const double x = x0 + t * scale;
    out += strprintf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x, y - 4, x, bottom);
    out += text(x, y - 7, strprintf("%g ms", t), " text-anchor=\"middle\" fill=\"#444\"");
  }
  for (int r = 0; r < world; r++) {
    const RankRole& role = sc.roles[r];
    const double ry = y + r * kRow;
    out += text(kMargin, ry + 12, role.idle() ? strprintf("rank %d (idle)", r)
                                              : strprintf("rank %d (p%d s%d)", r, role.pipeline, role.stage));
  }
  for (const SimSpan& span : sc.timeline) {
    const double x = x0 + span.start_ms * scale, w = std::max(0.5, (span.end_ms - span.start_ms) * scale);
    std::string what, label;
    if (span.kind == SimSpan::Kind::forward || span.kind == SimSpan::Kind::backward) {
      what = strprintf("%s of micro-batch %d", span.kind == SimSpan::Kind::forward ? "forward" : "backward", span.index);
      label = std::to_string(span.index);
    } else if (span.kind == SimSpan::Kind::optimizer) {
      what = label = "AdamW";
    } else {
      what = strprintf("%s of %s", span.kind == SimSpan::Kind::gather ? "all-gather" : "sum",
                       reduction_name(sc.reductions[span.index], L).c_str());
      label = reduction_name(sc.reductions[span.index], L);
    }
    const std::string tip = strprintf("%s: %.2f-%.2f ms", what.c_str(), span.start_ms, span.end_ms);
    const char* ink = span.kind == SimSpan::Kind::backward || span.kind == SimSpan::Kind::reduction ? "#fff" : "#000";
    for (int r : span.ranks) {
      const double ry = y + r * kRow;
      out += rect(x, ry, w, kRow - 3, kind_colour(span.kind), tip, " stroke=\"#fff\" stroke-width=\"0.5\"");
      if (7.0 * label.size() + 4 < w)
        out += text(x + w / 2, ry + 11, label, strprintf(" text-anchor=\"middle\" font-size=\"10\" fill=\"%s\"", ink));
    }
  }
  return bottom + kMargin;
}

}  // namespace

void write_plan_drawing(const CostModel& cost, const Plan& plan, const std::string& path) {
  const int world = cost.topology().world_size();
  Scene sc{cost, plan, {}, {}, cost.estimate(plan), plan_reductions(cost, plan), rank_roles(plan, world), {}};
  sc.sim = simulate(cost, plan, &sc.timeline);
  sc.compute_ms.assign(world, 0);
  for (const SimSpan& span : sc.timeline)
    if (span.kind == SimSpan::Kind::forward || span.kind == SimSpan::Kind::backward)
      for (int r : span.ranks) sc.compute_ms[r] += span.end_ms - span.start_ms;

  std::string body = text(kMargin, 26, strprintf("plan %s on %s", plan.source.empty() ? "(unnamed)" : plan.source.c_str(),
                                                 cost.topology().source.c_str()), " font-size=\"16\" font-weight=\"bold\"");
  body += text(kMargin, 46, strprintf("model %s (%s), T = %d, global batch %d; simulated %.1f ms per step, analytic %.1f ms",
                                      cost.model().name.c_str(), describe_model(cost.model()).c_str(), cost.seq_len(), plan.global_batch,
                                      sc.sim.iteration_ms, sc.estimate.iteration_ms));
  body += legend(sc, 60);
  double width = kMargin + kLabel + kPlot + kMargin;
  double y = draw_pipelines(sc, 112, width, body);
  y = draw_timeline(sc, y + 14, width - kLabel - 2 * kMargin, body);  // as wide as the widest pipeline

  std::ofstream out(path);
  if (!out) fail_input(path, "file", "a writable path for the plan's drawing", "a path that cannot be opened");
  out << strprintf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                   "height=\"%.0f\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"12\">\n",
                   width, y)
      << strprintf("<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n") << body << "</svg>\n";
}

}  // namespace eth::planner
