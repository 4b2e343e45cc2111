// The decode loop's stop decision (runtime/generate.h apply_stop), which generate() and the
// server's continuous-batching engine both call after each token: stop_after_line stops at the
// first newline that follows non-whitespace text (leading newlines, as Gemma 3 270M writes after
// "Answer:", are generated through), stop strings cut before the earliest match, and a cut never
// falls inside text an earlier call let through (what the server has streamed).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/runtime/generate.h"

namespace ragform::runtime {
namespace {

// Feeds `pieces` one by one as the decode loop does; returns the output after the call that
// stopped (or after the last piece) and how many pieces were appended.
struct Fed {
  GenerateOutput out;
  size_t pieces = 0;
  bool stopped = false;
};
Fed feed(const std::vector<std::string>& pieces, const GenerateOptions& opt) {
  Fed f;
  for (const std::string& p : pieces) {
    const size_t before = f.out.text.size();
    f.out.text += p;
    ++f.pieces;
    if (apply_stop(f.out, opt)) {
      f.stopped = true;
      // The line rule never cuts below what the previous call let through (a stream has emitted
      // that; stop strings have the server's stable_prefix to hold back their partial matches).
      if (opt.stop.empty()) {
        EXPECT_GE(f.out.text.size(), before) << "cut inside text an earlier call let through";
      }
      return f;
    }
  }
  return f;
}

TEST(StopRule, LineStopAtSkipsLeadingWhitespace) {
  EXPECT_EQ(line_stop_at(""), std::string::npos);
  EXPECT_EQ(line_stop_at("\n"), std::string::npos);
  EXPECT_EQ(line_stop_at("\n \t\r\n"), std::string::npos);
  EXPECT_EQ(line_stop_at("Paris"), std::string::npos);
  EXPECT_EQ(line_stop_at("Paris\n"), 5u);
  EXPECT_EQ(line_stop_at("\n\nParis\nLyon\n"), 7u);
  EXPECT_EQ(line_stop_at(" \n Paris \nx"), 9u);
  EXPECT_EQ(line_stop_at("Paris\r\n"), 6u);  // the '\r' stays with the line: graders strip it
}

TEST(StopRule, LeadingNewlineDoesNotEndTheAnswer) {
  GenerateOptions line;
  line.stop_after_line = true;
  const Fed f = feed({"\n", "The", " band", "\n", "<Rel0.86>"}, line);
  EXPECT_TRUE(f.stopped);
  EXPECT_EQ(f.pieces, 4u);
  EXPECT_EQ(f.out.text, "\nThe band");
  EXPECT_EQ(f.out.finish_reason, "stop");

  // The "\n" stop string that spotlight used before: the answer ends before its first word.
  GenerateOptions nl;
  nl.stop = {"\n"};
  const Fed g = feed({"\n", "The", " band", "\n"}, nl);
  EXPECT_TRUE(g.stopped);
  EXPECT_EQ(g.pieces, 1u);
  EXPECT_EQ(g.out.text, "");
}

TEST(StopRule, WhitespaceOnlyTextGoesOn) {
  GenerateOptions line;
  line.stop_after_line = true;
  const Fed f = feed({"\n", "  ", "\n\n", "\t"}, line);
  EXPECT_FALSE(f.stopped);
  EXPECT_EQ(f.out.text, "\n  \n\n\t");
  EXPECT_EQ(f.out.finish_reason, "");
}

TEST(StopRule, NewlineInsideAPieceCutsThere) {
  GenerateOptions line;
  line.stop_after_line = true;
  const Fed f = feed({"\n", "Paris\nThe capital"}, line);
  EXPECT_TRUE(f.stopped);
  EXPECT_EQ(f.out.text, "\nParis");
  // Text and newline in the first piece.
  const Fed g = feed({"\n\nParis\n"}, line);
  EXPECT_EQ(g.out.text, "\n\nParis");
}

TEST(StopRule, EarliestOfLineAndStopStrings) {
  GenerateOptions o;
  o.stop_after_line = true;
  o.stop = {"END", "."};
  EXPECT_EQ(feed({"Paris. More\n"}, o).out.text, "Paris");           // "." first
  EXPECT_EQ(feed({"Paris\nEND"}, o).out.text, "Paris");              // the line first
  EXPECT_EQ(feed({"\n", "Lyon", "EN", "D"}, o).out.text, "\nLyon");  // a string across pieces
  // Without the line rule the stop strings are what they were.
  GenerateOptions s;
  s.stop = {"END"};
  EXPECT_EQ(feed({"a\nb", "EN", "Dc"}, s).out.text, "a\nb");
  EXPECT_FALSE(feed({"a\nb"}, s).stopped);
}

TEST(StopRule, EmptyStopStringIsIgnored) {
  GenerateOptions o;
  o.stop = {""};
  EXPECT_FALSE(feed({"abc"}, o).stopped);
}

}  // namespace
}  // namespace ragform::runtime
