// The server-wide budget of reply memory (reply_budget.h).
#include "server/reply_budget.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <string>

#include "server/api_json.h"

namespace ragform::server {

ReplyBudget::Hold& ReplyBudget::Hold::operator=(Hold&& o) noexcept {
  if (this != &o) {
    release();
    budget_ = o.budget_;
    bytes_ = o.bytes_;
    o.budget_ = nullptr;
  }
  return *this;
}

void ReplyBudget::Hold::shrink(size_t bytes) {
  if (!budget_ || bytes >= bytes_) return;
  budget_->give_back(bytes_ - bytes);
  bytes_ = bytes;
}

void ReplyBudget::Hold::release() {
  if (!budget_) return;
  budget_->give_back(bytes_);
  budget_ = nullptr;
}

void ReplyBudget::give_back(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_ -= std::min(bytes, held_);
  }
  // A large reply's JSON tree is millions of small blocks, freed into the malloc arena of the
  // thread that built it; glibc keeps them there, so with a thread per connection the server's
  // memory grew with the number of threads that ever built one, however few were built at once
  // (8 replies of 39 MB built one after another on 8 threads still left 600 MB resident). Giving
  // the free pages back makes the budget a bound on memory, not only on replies.
#if defined(__GLIBC__)
  if (bytes >= kTrimAfterBytes) malloc_trim(0);
#endif
  cv_.notify_all();
}

ReplyBudget::Hold ReplyBudget::reserve(size_t bytes, std::chrono::milliseconds wait) {
  if (bytes < kSmallReplyBytes) return Hold();
  bytes = std::min(bytes, limit_);
  take(bytes, wait);
  return Hold(this, bytes);
}

void ReplyBudget::grow(Hold& hold, size_t bytes, std::chrono::milliseconds wait) {
  if (bytes < kSmallReplyBytes) return;
  bytes = std::min(bytes, limit_);
  const size_t have = hold.bytes();
  if (bytes <= have) return;
  take(bytes - have, wait);
  if (hold.budget_) {
    hold.bytes_ = bytes;
  } else {
    hold = Hold(this, bytes);
  }
}

void ReplyBudget::take(size_t bytes, std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  // First come, first served: a large request is not passed forever by small ones.
  const uint64_t ticket = next_ticket_++;
  queue_.push_back(ticket);
  auto my_turn = [&] { return queue_.front() == ticket && held_ + bytes <= limit_; };
  if (!my_turn()) {
    ++waited_;
    if (!cv_.wait_for(lock, wait, my_turn)) {
      queue_.erase(std::find(queue_.begin(), queue_.end(), ticket));
      ++refused_;
      const size_t held = held_;
      lock.unlock();
      cv_.notify_all();  // the next in line may fit now that this one leaves the queue
      throw api_json::ApiError{
          503,
          "server busy: " + what_ + " hold " + std::to_string(held) + " of the " +
              std::to_string(limit_) + " bytes of memory this server allows them at once; " +
              "this one needs " + std::to_string(bytes) + " (retry later, or ask for less)",
          "server_error", "server_busy"};
    }
  }
  queue_.pop_front();
  held_ += bytes;
  peak_ = std::max(peak_, held_);
  lock.unlock();
  cv_.notify_all();  // the next in line may fit beside this one
}

ReplyBudget::Stats ReplyBudget::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {limit_, held_, peak_, waited_, refused_};
}

Response held_reply(Response r, ReplyBudget::Hold hold) {
  reply_budget().grow(hold, r.body.size());
  hold.shrink(r.body.size());
  r.hold = std::make_shared<ReplyBudget::Hold>(std::move(hold));
  return r;
}

nlohmann::json to_json(const ReplyBudget::Stats& s) {
  return {{"limit", s.limit},
          {"held", s.held},
          {"peak", s.peak},
          {"waited", s.waited},
          {"refused", s.refused}};
}

ReplyBudget& reply_budget() {
  static ReplyBudget budget(kReplyBudgetBytes);
  return budget;
}

ReplyBudget& body_budget() {
  static ReplyBudget budget(kBodyBudgetBytes, "request bodies being parsed and handled");
  return budget;
}

std::shared_ptr<void> admit_body(const Request& req) {
  ReplyBudget::Hold hold = body_budget().reserve(req.body.size() * kParseBytesPerBodyByte);
  if (hold.bytes() == 0) return nullptr;
  return std::make_shared<ReplyBudget::Hold>(std::move(hold));
}

}  // namespace ragform::server
