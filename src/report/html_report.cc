#include "report/html_report.h"

#include <fmt/format.h>

#include "report/figures.h"
#include "report/svg_chart.h"

namespace dtbench::report {
namespace {

// The host name in a report's env, "?" when absent or malformed.
std::string host_name(const Json& env) {
  if (!env.contains("host") || !env.at("host").is_object()) return "?";
  const auto& h = env.at("host");
  return h.contains("hostname") && h.at("hostname").is_string() ? h.at("hostname").get<std::string>()
                                                                 : "?";
}

void flatten(const Json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else if (j.is_array() && !j.empty() && (j.front().is_object() || j.front().is_array())) {
    for (std::size_t i = 0; i < j.size(); ++i) flatten(j[i], fmt::format("{}[{}]", prefix, i), out);
  } else {
    out.emplace_back(prefix, j.is_string() ? j.get<std::string>() : j.dump());
  }
}

std::string kv_table(const Json& j) {
  std::vector<std::pair<std::string, std::string>> rows;
  flatten(j, "", rows);
  std::string s = "<table class=\"kv\">\n";
  for (const auto& [k, v] : rows)
    s += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", html_escape(k), html_escape(v));
  return s + "</table>\n";
}

constexpr const char* kStyle = R"(body{font-family:sans-serif;margin:24px;color:#222}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}
#findings ul{max-width:70em;line-height:1.45}
.keys{display:flex;flex-wrap:wrap;gap:12px;margin:12px 0}
.key{border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:13em}
.key .label{font-size:12px;color:#555}.key .value{font-size:20px;font-weight:bold}.key .note{font-size:12px;color:#555}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:8px 24px}
figure{margin:8px 0}figcaption{font-size:13px;color:#555}
svg.chart{font-size:11px;background:#fff;width:100%;height:auto}svg.chart .title{font-size:14px;font-weight:bold}
p.omitted{font-size:13px;color:#555;margin:4px 0}
table.kv{border-collapse:collapse;font-size:12px}table.kv th{text-align:left;padding:1px 12px 1px 0;color:#555;font-weight:normal}
details{margin:8px 0}#render-warning{display:none;color:#b00;font-weight:bold})";

// Runs in the viewer: measures each chart's plotted marks and its x-axis
// labels, and flags a chart with nothing plotted or labels drawn over each
// other on the page (and in data- attributes a headless browser can read).
constexpr const char* kScript = R"(<script>
// A label's box as drawn (slanted labels too): its four corners in the
// chart's coordinates; two boxes are apart when, along some edge's normal,
// they overlap by at most half a unit (the separating axis test; glyph boxes
// of neighbouring labels may touch).
function corners(t){var b=t.getBBox(),m=t.getCTM();
return [[b.x,b.y],[b.x+b.width,b.y],[b.x+b.width,b.y+b.height],[b.x,b.y+b.height]].map(function(p){
return [m.a*p[0]+m.c*p[1]+m.e,m.b*p[0]+m.d*p[1]+m.f];});}
function apart(a,b){var boxes=[a,b];for(var k=0;k<2;k++)for(var e=0;e<2;e++){
var p=boxes[k][e],q=boxes[k][e+1],x=q[1]-p[1],y=p[0]-q[0],l=Math.sqrt(x*x+y*y);if(!(l>0))continue;
var pa=a.map(function(v){return (v[0]*x+v[1]*y)/l;}),pb=b.map(function(v){return (v[0]*x+v[1]*y)/l;});
if(Math.max.apply(null,pa)<=Math.min.apply(null,pb)+0.5||Math.max.apply(null,pb)<=Math.min.apply(null,pa)+0.5)return true;}
return false;}
(function(){var bad=0,over=0;document.querySelectorAll('svg.chart').forEach(function(svg){
var g=svg.querySelector('g.plot');var b=g?g.getBBox():{width:0,height:0};
svg.setAttribute('data-plot-width',b.width.toFixed(1));svg.setAttribute('data-plot-height',b.height.toFixed(1));
svg.setAttribute('data-marks',g?g.children.length:0);if(!(b.width>0&&b.height>0))bad++;
var r=[].map.call(svg.querySelectorAll('text.xtick'),corners);var n=0;
for(var i=0;i<r.length;i++)for(var j=i+1;j<r.length;j++)if(!apart(r[i],r[j]))n++;
svg.setAttribute('data-overlapping-ticks',n);over+=n;});
document.body.setAttribute('data-charts',document.querySelectorAll('svg.chart').length);
document.body.setAttribute('data-empty-charts',bad);document.body.setAttribute('data-overlapping-ticks',over);
var msg=[];if(bad)msg.push(bad+' chart(s) have nothing plotted');if(over)msg.push(over+' pair(s) of axis labels are drawn over each other');
if(msg.length){var w=document.getElementById('render-warning');w.style.display='block';w.textContent=msg.join('; ');}})();
</script>)";

void write_sources(std::ostream& out, const std::vector<ReportSource>& sources) {
  out << "<h2>Sources</h2>\n<ul>\n";
  for (const auto& s : sources)
    if (s.kind == "trace")
      out << fmt::format("<li><code>{}</code> (trace, {} events)</li>\n", html_escape(s.path),
                         s.trace.at("traceEvents").size());
    else if (s.kind == "project")
      out << fmt::format("<li><code>{}</code> (projection, {} rank count(s))</li>\n", html_escape(s.path),
                         s.projection.size());
    else
      out << fmt::format("<li><code>{}</code> ({}, {} run(s), {} comm row(s)){}</li>\n", html_escape(s.path), s.kind,
                         s.points.size(), s.comm.size(),
                         s.env.contains("host") ? " on " + html_escape(host_name(s.env)) : "");
  out << "</ul>\n";
}

}  // namespace

void write_html(std::ostream& out, const std::vector<ReportSource>& sources, const std::string& title,
                const FindingsOptions& options) {
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" << html_escape(title)
      << "</title>\n<style>" << kStyle << "</style></head>\n<body>\n";
  out << "<h1>" << html_escape(title) << "</h1>\n<p id=\"render-warning\"></p>\n";
  const auto found = find_findings(sources, options);
  out << "<section id=\"findings\">\n<h2>What the runs found</h2>\n";
  if (!found.figures.empty()) {
    out << "<div class=\"keys\">\n";
    for (const auto& k : found.figures)
      out << fmt::format(
          "<div class=\"key\"><div class=\"label\">{}</div><div class=\"value\">{}</div><div class=\"note\">{}</div>"
          "</div>\n",
          html_escape(k.label), html_escape(k.value), html_escape(k.note));
    out << "</div>\n";
  }
  out << "<ul>\n";
  for (const auto& s : found.sentences) out << "<li>" << html_escape(s) << "</li>\n";
  if (found.sentences.empty()) out << "<li>No training, collective or projection rows in these files.</li>\n";
  out << "</ul>\n</section>\n";
  out << "<h2>Charts</h2>\n<div class=\"charts\">\n";
  std::string left_out;
  for (const auto& f : build_figures(sources)) {
    if (!f.omitted.empty()) {
      left_out += fmt::format("<p class=\"omitted\" id=\"{}\">Left out: {} — {}.</p>\n", f.id, html_escape(f.title),
                              html_escape(f.omitted));
      continue;
    }
    out << "<figure id=\"" << f.id << "\">\n" << f.svg << "<figcaption>" << html_escape(f.caption)
        << "</figcaption></figure>\n";
  }
  out << "</div>\n" << left_out;
  write_sources(out, sources);
  for (const auto& s : sources) {
    if (s.kind == "trace" || s.kind == "project") continue;
    out << "<h2>Environment and configuration: " << html_escape(file_basename(s.path)) << "</h2>\n";
    out << "<details><summary>environment</summary>\n" << kv_table(s.env) << "</details>\n";
    out << "<details><summary>configuration</summary>\n" << kv_table(s.config) << "</details>\n";
  }
  out << kScript << "\n</body></html>\n";
}

}  // namespace dtbench::report
