// Package controller reconciles PaddleJobs into pods, a headless Service and
// the environment contract that lets Paddle processes find each other.
package controller
