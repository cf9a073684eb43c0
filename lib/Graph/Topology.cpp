//===- Topology.cpp - Node order of a model graph -----------------------===//

#include "lib/Graph/Topology.h"

#include <functional>
#include <queue>

namespace estc {
namespace graph {

std::vector<int> topologicalOrder(const std::vector<std::vector<int>> &inputsOf,
                                  std::vector<int> *cycle) {
  // Kahn's algorithm with a min-heap of ready nodes.
  const int n = static_cast<int>(inputsOf.size());
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> users(n);
  for (int i = 0; i < n; ++i)
    for (int input : inputsOf[i]) {
      ++pending[i];
      users[input].push_back(i);
    }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0)
      ready.push(i);
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int user : users[i])
      if (--pending[user] == 0)
        ready.push(user);
  }
  if (static_cast<int>(order.size()) == n || !cycle)
    return order;

  // Follow unresolved inputs from the first stuck node until one repeats.
  int current = 0;
  while (pending[current] == 0)
    ++current;
  std::vector<int> path, position(n, -1);
  while (position[current] < 0) {
    position[current] = static_cast<int>(path.size());
    path.push_back(current);
    for (int input : inputsOf[current])
      if (pending[input] > 0) {
        current = input;
        break;
      }
  }
  cycle->assign(path.begin() + position[current], path.end());
  cycle->push_back(current);
  return order;
}

} // namespace graph
} // namespace estc
